/* The protobuf wire format, read without unpacking (frontends/onnx/):
 * varints and one field at a time, bounds-checked against the end of the
 * enclosing message. Used where protobuf-c's unpacking cannot be trusted
 * with the input yet (onnx_scan.c: nesting and names before unpacking) or
 * where the schema lacks the message (onnx_seq.c: SequenceProto). */
#ifndef MP__ONNX_WIRE_H
#define MP__ONNX_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mp__wire {
    const uint8_t *p;
    size_t len, pos; /* len: the end of the message being read */
} mp__wire;

static inline bool mp__wire_varint(mp__wire *w, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (w->pos >= w->len)
            return false;
        uint8_t b = w->p[w->pos++];
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* The next field: number, wire type, and for length-delimited ones the
 * bytes (*data NULL for the other wire types, which are skipped). False at
 * the end or on bad input (*bad set: a zero or oversized field number, a
 * group or unknown wire type, a field running past the end). */
static inline bool mp__wire_next(mp__wire *w, uint32_t *field,
                                 unsigned *wire_type, const uint8_t **data,
                                 size_t *dlen, bool *bad)
{
    *bad = false;
    if (w->pos >= w->len)
        return false;
    uint64_t key, v;
    if (!mp__wire_varint(w, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX) {
        *bad = true;
        return false;
    }
    *field = (uint32_t)(key >> 3);
    *wire_type = (unsigned)(key & 7);
    *data = NULL;
    *dlen = 0;
    switch (key & 7) {
    case 0:
        if (!mp__wire_varint(w, &v))
            *bad = true;
        break;
    case 1:
        if (w->len - w->pos < 8)
            *bad = true;
        else
            w->pos += 8;
        break;
    case 5:
        if (w->len - w->pos < 4)
            *bad = true;
        else
            w->pos += 4;
        break;
    case 2:
        if (!mp__wire_varint(w, &v) || v > w->len - w->pos) {
            *bad = true;
            break;
        }
        *data = w->p + w->pos;
        *dlen = (size_t)v;
        w->pos += (size_t)v;
        break;
    default: /* groups (3, 4), which protobuf-c refuses too, and 6, 7 */
        *bad = true;
    }
    return !*bad;
}

#endif /* MP__ONNX_WIRE_H */
