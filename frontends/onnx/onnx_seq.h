/* ONNX sequences and optionals for the loader (frontends/onnx/onnx_seq.c):
 * the mp__seq (core/ops/shape.h) of a declared sequence/optional type, and
 * of a serialized SequenceProto / OptionalProto (onnx-data.proto, read
 * from the protobuf wire format: Debian's onnx.proto has no such
 * messages). Only with MP_WITH_ONNX. */
#ifndef MP__ONNX_SEQ_H
#define MP__ONNX_SEQ_H

#include "shape.h"
#include "onnx.pb-c.h"

/* The value a sequence- or optional-typed TypeProto declares: element
 * type, the element shape as a prototype (symbolic dims -1), length and
 * presence unknown. *out NULL (MP_OK) when tp is a tensor type or has no
 * type. */
mp_status mp__onnx_seq_of_type(mp_ctx *ctx, const Onnx__TypeProto *tp,
                              mp__seq **out);
/* The value of a serialized SequenceProto (optional 0) or OptionalProto
 * (optional 1) of tensors: every element's dtype and dims. MP_ERR_PARSE
 * (naming what) when the bytes are not one. */
mp_status mp__onnx_seq_of_pb(mp_ctx *ctx, const void *data, size_t len,
                            int optional, const char *what, mp__seq **out);

#endif /* MP__ONNX_SEQ_H */
