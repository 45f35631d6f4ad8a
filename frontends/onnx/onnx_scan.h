/* A check of a serialized ModelProto before protobuf-c unpacks it
 * (frontends/onnx/onnx_scan.c). protobuf-c unpacks by recursion, one C
 * frame (about 1 KiB) per nested message, so a small file nested
 * thousands deep overflows any stack; and it copies string fields as C
 * strings, so a NUL byte inside a name silently cuts it. The scan walks
 * the wire format with an explicit stack along the message-typed fields
 * of the ModelProto schema and refuses, naming the place:
 * - subgraphs (GraphProto inside a node attribute) nested deeper than
 *   MP__ONNX_MAX_NESTING below the graph that holds them
 *   (MP_ERR_UNSUPPORTED);
 * - types (TypeProto inside a sequence, map or optional type) nested
 *   deeper than MP__ONNX_MAX_NESTING levels (MP_ERR_UNSUPPORTED);
 * - a name (of a graph, node, tensor, value, attribute, function,
 *   initializer; a node's inputs and outputs, op type and domain; a
 *   dim_param) holding a NUL byte or bytes that are not UTF-8
 *   (MP_ERR_CORRUPT);
 * - bytes that are not a protobuf (MP_ERR_CORRUPT), as protobuf-c would.
 * Only with MP_WITH_ONNX. */
#ifndef MP__ONNX_SCAN_H
#define MP__ONNX_SCAN_H

#include "base.h"

/* The most levels of subgraphs below a graph, and of TypeProtos in one
 * type (a tensor type is 1 level, a sequence of tensors 2). */
#define MP__ONNX_MAX_NESTING 64

/* MP_OK when protobuf-c may unpack data as a ModelProto within a bounded
 * stack; else the error, in ctx, prefixed with src. */
mp_status mp__onnx_scan_model(mp_ctx *ctx, const void *data, size_t len,
                              const char *src);

#endif /* MP__ONNX_SCAN_H */
