/* Shape functions of ops whose output sizes depend on input VALUES (issue
 * 3, node conformance): StringNormalizer and StringSplit (string values,
 * core/strval.h), NonMaxSuppression (box coordinates and scores) and
 * ImageDecoder (the image's container header). Each infers what it can
 * without the values and computes the exact size when they are known (a
 * constant, or a graph input bound with mp_input_value). The values may
 * come from untrusted files: every read is bounds-checked and the work is
 * bounded. */
#include "shape.h"
#include "strval.h"

#include <stdlib.h>
#include <string.h>

static int dtype_in(const mp_graph *g, const mp__node *n, uint32_t i)
{
    const mp__tensor *t = mp__in(g, n, i);
    return t ? t->dtype : MP_DTYPE_UNDEFINED;
}

/* t's whole value (every element): its count in *cnt */
static bool whole_value(const mp_graph *g, const mp__node *n, uint32_t i,
                        int64_t *numel)
{
    const mp__tensor *t = mp__in(g, n, i);
    mp__shape s;
    mp__in_shape(g, n, i, &s);
    int64_t c = mp__shape_numel(&s);
    if (!t || c < 0)
        return false;
    *numel = c;
    return c == 0 || (t->value && (int64_t)t->n_value == c);
}

/* ---- StringNormalizer ------------------------------------------------------ */

static bool ascii_only(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] >= 0x80)
            return false;
    return true;
}

/* s with ASCII case changed (how: 'L' lower, 'U' upper, else kept) */
static void change_case(const char *s, size_t len, char *out, char how)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (how == 'L' && c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        else if (how == 'U' && c >= 'a' && c <= 'z')
            c = (char)(c - 'a' + 'A');
        out[i] = c;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Folds StringNormalizer when X's strings are known: *kept[i] says whether
 * element i survives the stopwords; false when it cannot tell (then the
 * caller keeps the upper bound). buf holds MP__STR_MAX_LEN bytes. */
static mp_status normalizer_keep(mp_graph *g, uint32_t node, const int64_t *x,
                                 int64_t c, bool cs, bool *kept, char *buf,
                                 bool *ok)
{
    const mp__node *n = &g->nodes[node];
    size_t nstop = 0;
    const char *cur = NULL;
    *ok = false;
    if (!mp__attr_strings(n, "stopwords", &nstop, &cur)) {
        if (mp__node_attr(n, "stopwords"))
            return MP_OK; /* a stopwords list memplan cannot read */
        nstop = 0;
    }
    if (nstop > MP__VALUE_MAX)
        return MP_OK;
    int64_t *stop = mp__alloc(g->ctx, (nstop ? nstop : 1) * sizeof *stop);
    if (!stop)
        return MP_ERR_NOMEM;
    mp_status st = MP_OK;
    bool good = true;
    /* the stopwords, interned (case-insensitive: lowered; ASCII only, as
     * the Unicode case rules are not memplan's) */
    for (size_t k = 0; k < nstop && good && !st; k++) {
        size_t len;
        good = mp__attr_strings_next(&cur, buf, MP__STR_MAX_LEN, &len) &&
               (cs || ascii_only(buf, len));
        if (good && !cs)
            change_case(buf, len, buf, 'L');
        if (good)
            st = mp__str_intern(g, buf, len, &stop[k]);
        good = good && !st && stop[k] >= 0;
    }
    if (good && !st)
        qsort(stop, nstop, sizeof *stop, cmp_i64);
    for (int64_t i = 0; i < c && good && !st; i++) {
        const char *s;
        size_t len;
        int64_t id = -1;
        good = mp__str_get(g, x[i], &s, &len);
        if (good && !cs) {
            good = len <= MP__STR_MAX_LEN && ascii_only(s, len);
            if (good) {
                change_case(s, len, buf, 'L');
                if (!mp__str_find(g, buf, len, &id))
                    id = -1; /* in no stopword */
            }
        } else if (good) {
            id = x[i];
        }
        kept[i] = !(id >= 0 && nstop &&
                    bsearch(&id, stop, nstop, sizeof *stop, cmp_i64));
    }
    mp__dealloc(g->ctx, stop);
    *ok = good && !st;
    return st;
}

/* StringNormalizer (X [C] or [1, C]): the elements equal to a stopword
 * (is_case_sensitive, else ASCII case-insensitively) are dropped, then
 * the case is changed (case_change_action NONE/LOWER/UPPER); when every
 * element is dropped the output is [1] (or [1, 1]) holding "". Without
 * X's value the output gets X's shape: an upper bound. */
MP__SHAPE_FN(mp__shape_string_normalizer)
{
    const mp__node *n = &g->nodes[node];
    static const char *const acts[] = {"NONE", "LOWER", "UPPER", NULL};
    mp_status es = mp__check_enum(g, node, "case_change_action", "NONE", acts,
                                  NULL);
    if (es)
        return es;
    mp__shape s;
    mp__in_shape(g, n, 0, &s);
    int64_t c = -1;
    const mp__tensor *x = mp__in(g, n, 0);
    bool shape_ok = s.rank == 1 || (s.rank == 2 && s.d[0] == 1);
    if (!x || x->dtype != MP_DTYPE_STRING || !shape_ok ||
        !whole_value(g, n, 0, &c) || c <= 0) {
        mp_status st = mp__out_set(g, node, 0, MP_DTYPE_STRING, &s);
        return st ? st : mp__shape_done(g, node);
    }
    const char *act = mp__attr_str(n, "case_change_action", "NONE");
    char how = strcmp(act, "LOWER") == 0 ? 'L'
               : strcmp(act, "UPPER") == 0 ? 'U'
                                            : 'N';
    bool cs = mp__attr_int(n, "is_case_sensitive", 0) != 0;
    bool *kept = mp__calloc(g->ctx, (size_t)c, sizeof *kept);
    char *buf = mp__alloc(g->ctx, MP__STR_MAX_LEN);
    int64_t *out = mp__alloc(g->ctx, (size_t)c * sizeof *out);
    mp_status st = kept && buf && out ? MP_OK : MP_ERR_NOMEM;
    bool ok = false;
    if (!st)
        st = normalizer_keep(g, node, x->value, c, cs, kept, buf, &ok);
    int64_t k = 0;
    bool vals = ok;
    for (int64_t i = 0; ok && !st && i < c; i++) {
        if (!kept[i])
            continue;
        const char *p;
        size_t len;
        if (how == 'N') {
            out[k++] = x->value[i];
            continue;
        }
        if (!mp__str_get(g, x->value[i], &p, &len) || len > MP__STR_MAX_LEN ||
            !ascii_only(p, len)) {
            vals = false; /* the count holds; the strings are not known */
            k++;
            continue;
        }
        change_case(p, len, buf, how);
        st = mp__str_intern(g, buf, len, &out[k]);
        vals = vals && out[k++] >= 0;
    }
    if (ok && !st) {
        if (k == 0) { /* all dropped: one empty string */
            st = mp__str_intern(g, "", 0, &out[0]);
            vals = !st && out[0] >= 0;
        }
        s.d[s.rank - 1] = k ? k : 1;
    }
    if (!st)
        st = mp__out_set(g, node, 0, MP_DTYPE_STRING, &s);
    if (!st && ok && vals)
        st = mp__out_value(g, node, 0, out, (uint32_t)(k ? k : 1));
    mp__dealloc(g->ctx, kept);
    mp__dealloc(g->ctx, buf);
    mp__dealloc(g->ctx, out);
    return st ? st : mp__shape_done(g, node);
}

/* ---- StringSplit ------------------------------------------------------------ */

/* Length of the whitespace character at p (0: none), as Python's
 * str.split() sees it: ASCII \t\n\v\f\r, \x1c-\x1f, space, and the UTF-8
 * encoded Unicode spaces. */
static size_t space_at(const unsigned char *p, const unsigned char *end)
{
    size_t left = (size_t)(end - p);
    if ((*p >= 0x09 && *p <= 0x0d) || (*p >= 0x1c && *p <= 0x20))
        return 1;
    if (left >= 2 && p[0] == 0xc2 && (p[1] == 0x85 || p[1] == 0xa0))
        return 2;
    if (left < 3)
        return 0;
    if (p[0] == 0xe1 && p[1] == 0x9a && p[2] == 0x80) /* U+1680 */
        return 3;
    if (p[0] == 0xe2 && p[1] == 0x80 &&
        ((p[2] >= 0x80 && p[2] <= 0x8a) || p[2] == 0xa8 || p[2] == 0xa9 ||
         p[2] == 0xaf))
        return 3; /* U+2000-200A, 2028, 2029, 202F */
    if (p[0] == 0xe2 && p[1] == 0x81 && p[2] == 0x9f) /* U+205F */
        return 3;
    if (p[0] == 0xe3 && p[1] == 0x80 && p[2] == 0x80) /* U+3000 */
        return 3;
    return 0;
}

/* Splits s as Python's str.split(sep or None, maxsplit) (maxsplit < 0:
 * no limit): the token count; the first cap tokens' offsets and lengths
 * into off/len (NULL: count only). */
static int64_t split_tokens(const char *s, size_t n, const char *sep,
                            size_t sl, int64_t maxsplit, size_t *off,
                            size_t *len, int64_t cap)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    int64_t cnt = 0;
#define MP__TOKEN(a, b)                                                   \
    do {                                                                 \
        if (off && cnt < cap) {                                          \
            off[cnt] = (size_t)((a) - (const unsigned char *)s);          \
            len[cnt] = (size_t)((b) - (a));                              \
        }                                                                \
        cnt++;                                                           \
    } while (0)
    if (sl == 0) {
        size_t w;
        while (p < end) {
            while (p < end && (w = space_at(p, end)) != 0)
                p += w;
            if (p == end)
                break;
            if (maxsplit >= 0 && cnt == maxsplit) {
                /* the rest, leading space skipped (trailing kept) */
                MP__TOKEN(p, end);
                break;
            }
            const unsigned char *q = p;
            while (q < end && space_at(q, end) == 0)
                q++;
            MP__TOKEN(p, q);
            p = q;
        }
        return cnt;
    }
    const unsigned char *i = p;
    while (maxsplit < 0 || cnt < maxsplit) {
        const unsigned char *hit = NULL;
        for (const unsigned char *q = i; (size_t)(end - q) >= sl; q++)
            if (*q == (unsigned char)sep[0] && memcmp(q, sep, sl) == 0) {
                hit = q;
                break;
            }
        if (!hit)
            break;
        MP__TOKEN(i, hit);
        i = hit + sl;
    }
    MP__TOKEN(i, end);
#undef MP__TOKEN
    return cnt;
}

/* StringSplit (X) -> (Y [..., max tokens], Z lengths, X's shape): with X's
 * strings known the token counts are computed (delimiter: "" splits on
 * whitespace runs; maxsplit); Y's strings are padded with "". */
MP__SHAPE_FN(mp__shape_string_split)
{
    const mp__node *n = &g->nodes[node];
    mp__shape s, sub = {.rank = -1};
    mp__in_shape(g, n, 0, &s);
    if (s.rank >= 0 && s.rank < MP_MAX_RANK) {
        sub = s;
        sub.d[sub.rank++] = -1;
    }
    const mp__tensor *x = mp__in(g, n, 0);
    const char *sep = mp__attr_str(n, "delimiter", "");
    size_t sl = strlen(sep);
    int64_t maxsplit = mp__node_attr(n, "maxsplit")
                           ? mp__attr_int(n, "maxsplit", -1)
                           : -1;
    int64_t c = -1, most = 0;
    int64_t *cnt = NULL;
    mp_status st = MP_OK;
    /* bounded work: the delimiter is searched at every byte */
    bool known = sub.rank >= 1 && x && x->dtype == MP_DTYPE_STRING &&
                 whole_value(g, n, 0, &c) && sl <= 64;
    uint64_t bytes = 0;
    for (int64_t i = 0; known && i < c; i++) {
        const char *p;
        size_t len;
        known = mp__str_get(g, x->value[i], &p, &len) &&
                mp__add_u64(bytes, len, &bytes) && bytes <= MP__STR_MAX_BYTES;
    }
    if (known && c > 0) {
        cnt = mp__alloc(g->ctx, (size_t)c * sizeof *cnt);
        if (!cnt)
            return MP_ERR_NOMEM;
        for (int64_t i = 0; i < c; i++) {
            const char *p;
            size_t len;
            mp__str_get(g, x->value[i], &p, &len);
            cnt[i] = split_tokens(p, len, sep, sl, maxsplit, NULL, NULL, 0);
            most = cnt[i] > most ? cnt[i] : most;
        }
    }
    if (known)
        sub.d[sub.rank - 1] = most;
    st = mp__out_set(g, node, 0, MP_DTYPE_STRING, &sub);
    if (!st)
        st = mp__out_set(g, node, 1, MP_DTYPE_INT64, &s);
    if (!st && cnt)
        st = mp__out_value(g, node, 1, cnt, (uint32_t)c);
    /* Y's strings, when small */
    uint64_t total;
    if (!st && cnt && most > 0 && mp__mul_u64((uint64_t)c, (uint64_t)most,
                                             &total) &&
        total <= MP__VALUE_MAX) {
        int64_t *ids = mp__alloc(g->ctx, (size_t)total * sizeof *ids);
        size_t *off = mp__alloc(g->ctx, (size_t)most * sizeof *off);
        size_t *len = mp__alloc(g->ctx, (size_t)most * sizeof *len);
        int64_t empty = -1;
        st = ids && off && len ? mp__str_intern(g, "", 0, &empty)
                               : MP_ERR_NOMEM;
        bool ok = !st && empty >= 0;
        for (int64_t i = 0; i < c && ok && !st; i++) {
            const char *p;
            size_t l;
            mp__str_get(g, x->value[i], &p, &l);
            split_tokens(p, l, sep, sl, maxsplit, off, len, most);
            for (int64_t k = 0; k < most && ok && !st; k++) {
                int64_t *id = &ids[i * most + k];
                if (k >= cnt[i]) {
                    *id = empty;
                } else {
                    /* interning may move the table: fetch it again */
                    mp__str_get(g, x->value[i], &p, &l);
                    st = mp__str_intern(g, p + off[k], len[k], id);
                }
                ok = *id >= 0;
            }
        }
        if (ok && !st)
            st = mp__out_value(g, node, 0, ids, (uint32_t)total);
        mp__dealloc(g->ctx, ids);
        mp__dealloc(g->ctx, off);
        mp__dealloc(g->ctx, len);
    }
    mp__dealloc(g->ctx, cnt);
    return st ? st : mp__shape_done(g, node);
}

/* ---- NonMaxSuppression ------------------------------------------------------ */

typedef struct nms_box {
    float score;
    int64_t idx;
} nms_box;

/* higher score first, then the lower index (as the ONNX reference) */
static int cmp_box(const void *a, const void *b)
{
    const nms_box *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Box i of boxes as x1 <= x2, y1 <= y2 (float arithmetic, as the
 * runtimes do) */
static void nms_corners(const float *b, int center, float *x1, float *x2,
                        float *y1, float *y2)
{
    if (center) {
        float hw = b[2] / 2, hh = b[3] / 2;
        *x1 = b[0] - hw;
        *x2 = b[0] + hw;
        *y1 = b[1] - hh;
        *y2 = b[1] + hh;
        return;
    }
    *y1 = b[0] < b[2] ? b[0] : b[2];
    *y2 = b[0] < b[2] ? b[2] : b[0];
    *x1 = b[1] < b[3] ? b[1] : b[3];
    *x2 = b[1] < b[3] ? b[3] : b[1];
}

static bool nms_suppress(const float *a, const float *b, int center,
                         float iou)
{
    float ax1, ax2, ay1, ay2, bx1, bx2, by1, by2;
    nms_corners(a, center, &ax1, &ax2, &ay1, &ay2);
    nms_corners(b, center, &bx1, &bx2, &by1, &by2);
    float ix1 = ax1 > bx1 ? ax1 : bx1, ix2 = ax2 < bx2 ? ax2 : bx2;
    float iy1 = ay1 > by1 ? ay1 : by1, iy2 = ay2 < by2 ? ay2 : by2;
    if (!(ix2 > ix1) || !(iy2 > iy1))
        return false;
    float inter = (ix2 - ix1) * (iy2 - iy1);
    float area_a = (ax2 - ax1) * (ay2 - ay1), area_b = (bx2 - bx1) * (by2 - by1);
    float uni = area_a + area_b - inter;
    if (!(inter > 0) || !(area_a > 0) || !(area_b > 0) || !(uni > 0))
        return false;
    return inter / uni > iou;
}

/* A scalar (or 1-element) optional input: *present false when omitted;
 * false when given but its value is unknown. */
static bool scalar_in(const mp_graph *g, const mp__node *n, uint32_t i,
                      bool *present, double *v)
{
    const mp__tensor *t = mp__in(g, n, i);
    *present = t != NULL;
    if (!t)
        return true;
    int64_t c;
    if (!whole_value(g, n, i, &c) || c > 1)
        return false;
    *present = c == 1; /* an empty tensor counts as omitted */
    if (c == 1)
        *v = mp__value_double(t, 0);
    return true;
}

/* The number of boxes NonMaxSuppression selects, or -1 when the values
 * are not all known. */
static mp_status nms_count(mp_graph *g, uint32_t node, int64_t *out)
{
    const mp__node *n = &g->nodes[node];
    const mp__tensor *bx = mp__in(g, n, 0), *sc = mp__in(g, n, 1);
    mp__shape bs, ss;
    mp__in_shape(g, n, 0, &bs);
    mp__in_shape(g, n, 1, &ss);
    int64_t nb, ns;
    *out = -1;
    bool have_max, have_iou, have_thr;
    double dmax = 0, iou = 0, thr = 0;
    if (!bx || !sc || bs.rank != 3 || ss.rank != 3 || bs.d[2] != 4 ||
        ss.d[0] != bs.d[0] || ss.d[2] != bs.d[1] ||
        !mp__dtype_is_float(bx->dtype) || !mp__dtype_is_float(sc->dtype) ||
        !whole_value(g, n, 0, &nb) || !whole_value(g, n, 1, &ns) ||
        !scalar_in(g, n, 2, &have_max, &dmax) ||
        !scalar_in(g, n, 3, &have_iou, &iou) ||
        !scalar_in(g, n, 4, &have_thr, &thr))
        return MP_OK;
    int64_t maxb = !have_max || !(dmax > 0) ? 0
                   : dmax > 9.0e18          ? INT64_MAX
                                            : (int64_t)dmax;
    int64_t batches = bs.d[0], boxes = bs.d[1], classes = ss.d[1];
    int center = (int)mp__attr_int(n, "center_point_box", 0) != 0;
    if (maxb == 0 || batches == 0 || classes == 0 || boxes == 0) {
        *out = 0;
        return MP_OK;
    }
    float *fb = mp__alloc(g->ctx, (size_t)nb * sizeof *fb);
    nms_box *cand = mp__alloc(g->ctx, (size_t)boxes * sizeof *cand);
    int64_t *sel = mp__alloc(g->ctx, (size_t)boxes * sizeof *sel);
    mp_status st = fb && cand && sel ? MP_OK : MP_ERR_NOMEM;
    for (int64_t i = 0; !st && i < nb; i++)
        fb[i] = (float)mp__value_double(bx, (uint32_t)i);
    int64_t total = 0;
    for (int64_t b = 0; !st && b < batches; b++)
        for (int64_t c = 0; c < classes; c++) {
            int64_t m = 0, k = 0;
            for (int64_t i = 0; i < boxes; i++) {
                float s = (float)mp__value_double(
                    sc, (uint32_t)((b * classes + c) * boxes + i));
                if (have_thr && !(s > (float)thr))
                    continue;
                cand[m].score = s;
                cand[m++].idx = i;
            }
            qsort(cand, (size_t)m, sizeof *cand, cmp_box);
            for (int64_t i = 0; i < m && k < maxb; i++) {
                const float *a = fb + (b * boxes + cand[i].idx) * 4;
                bool keep = true;
                for (int64_t j = 0; j < k && keep; j++)
                    keep = !nms_suppress(a, fb + (b * boxes + sel[j]) * 4,
                                         center, (float)iou);
                if (keep)
                    sel[k++] = cand[i].idx;
            }
            total += k;
        }
    mp__dealloc(g->ctx, fb);
    mp__dealloc(g->ctx, cand);
    mp__dealloc(g->ctx, sel);
    if (!st)
        *out = total;
    return st;
}

/* NonMaxSuppression (boxes [B, N, 4], scores [B, C, N], max boxes per
 * class?, iou_threshold?, score_threshold?) -> selected_indices
 * [num_selected, 3] int64: num_selected is computed when every given
 * input's value is known, else unknown. */
MP__SHAPE_FN(mp__shape_nms)
{
    int64_t cpb = mp__attr_int(&g->nodes[node], "center_point_box", 0);
    if (cpb != 0 && cpb != 1)
        return mp__node_err(g, node, "attribute 'center_point_box' = %lld: "
                           "must be 0 or 1", (long long)cpb);
    int64_t k;
    mp_status st = nms_count(g, node, &k);
    mp__shape s = {.rank = 2, .d = {k, 3}};
    if (!st)
        st = mp__out_set(g, node, 0, MP_DTYPE_INT64, &s);
    return st ? st : mp__shape_done(g, node);
}

/* ---- ImageDecoder ------------------------------------------------------------ */

/* The encoded bytes (values of a uint8 tensor) as a byte buffer */
typedef struct img_bytes {
    const unsigned char *p;
    size_t n;
} img_bytes;

static bool rd_u16(const img_bytes *b, size_t at, bool be, uint32_t *v)
{
    if (at > b->n || b->n - at < 2)
        return false;
    const unsigned char *q = b->p + at;
    *v = be ? (uint32_t)q[0] << 8 | q[1] : (uint32_t)q[1] << 8 | q[0];
    return true;
}

static bool rd_u32(const img_bytes *b, size_t at, bool be, uint32_t *v)
{
    uint32_t hi, lo;
    if (!rd_u16(b, at, be, be ? &hi : &lo) ||
        !rd_u16(b, at + 2, be, be ? &lo : &hi))
        return false;
    *v = hi << 16 | lo;
    return true;
}

static bool has_at(const img_bytes *b, size_t at, const char *sig, size_t n)
{
    return at <= b->n && b->n - at >= n && memcmp(b->p + at, sig, n) == 0;
}

/* BMP: BITMAPCOREHEADER (16-bit dims) or a later header (signed 32-bit;
 * a negative height is a top-down image) */
static bool img_bmp(const img_bytes *b, int64_t *w, int64_t *h)
{
    uint32_t hsz, x, y;
    if (!has_at(b, 0, "BM", 2) || !rd_u32(b, 14, false, &hsz))
        return false;
    if (hsz == 12) {
        if (!rd_u16(b, 18, false, &x) || !rd_u16(b, 20, false, &y))
            return false;
        *w = x;
        *h = y;
        return true;
    }
    if (hsz < 16 || !rd_u32(b, 18, false, &x) || !rd_u32(b, 22, false, &y))
        return false;
    int64_t sx = (int32_t)x, sy = (int32_t)y;
    *w = sx;
    *h = sy < 0 ? -sy : sy;
    return sx > 0;
}

static bool img_png(const img_bytes *b, int64_t *w, int64_t *h)
{
    uint32_t x, y;
    if (!has_at(b, 0, "\x89PNG\r\n\x1a\n", 8) || !has_at(b, 12, "IHDR", 4) ||
        !rd_u32(b, 16, true, &x) || !rd_u32(b, 20, true, &y))
        return false;
    *w = x;
    *h = y;
    return true;
}

/* PNM (P1-P6): whitespace and # comments between the ASCII fields */
static bool pnm_field(const img_bytes *b, size_t *at, int64_t *v)
{
    size_t i = *at;
    for (;;) {
        while (i < b->n && (b->p[i] == ' ' || (b->p[i] >= 9 && b->p[i] <= 13)))
            i++;
        if (i < b->n && b->p[i] == '#') {
            while (i < b->n && b->p[i] != '\n' && b->p[i] != '\r')
                i++;
            continue;
        }
        break;
    }
    int64_t x = 0;
    size_t d = 0;
    while (i < b->n && b->p[i] >= '0' && b->p[i] <= '9' && d < 12) {
        x = x * 10 + (b->p[i++] - '0');
        d++;
    }
    if (d == 0 || d == 12)
        return false;
    *v = x;
    *at = i;
    return true;
}

static bool img_pnm(const img_bytes *b, int64_t *w, int64_t *h)
{
    size_t at = 2;
    if (b->n < 3 || b->p[0] != 'P' || b->p[1] < '1' || b->p[1] > '6')
        return false;
    return pnm_field(b, &at, w) && pnm_field(b, &at, h);
}

/* JPEG: the first SOF marker's frame header */
static bool img_jpeg(const img_bytes *b, int64_t *w, int64_t *h)
{
    if (!has_at(b, 0, "\xff\xd8", 2))
        return false;
    size_t i = 2;
    while (i < b->n) {
        if (b->p[i] != 0xff)
            return false;
        while (i < b->n && b->p[i] == 0xff) /* fill bytes */
            i++;
        if (i >= b->n)
            return false;
        unsigned m = b->p[i++];
        if (m == 0x01 || (m >= 0xd0 && m <= 0xd8))
            continue; /* no length */
        if (m == 0xd9 || m == 0xda)
            return false; /* end, or scan data before any frame */
        uint32_t len, x, y;
        if (!rd_u16(b, i, true, &len) || len < 2)
            return false;
        if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc) {
            if (!rd_u16(b, i + 3, true, &y) || !rd_u16(b, i + 5, true, &x))
                return false;
            *w = x;
            *h = y;
            return true;
        }
        i += len;
    }
    return false;
}

/* TIFF: ImageWidth (256) and ImageLength (257) of the first IFD */
static bool img_tiff(const img_bytes *b, int64_t *w, int64_t *h)
{
    bool be;
    if (has_at(b, 0, "II*\0", 4))
        be = false;
    else if (has_at(b, 0, "MM\0*", 4))
        be = true;
    else
        return false;
    uint32_t ifd, cnt;
    if (!rd_u32(b, 4, be, &ifd) || !rd_u16(b, ifd, be, &cnt))
        return false;
    int64_t vw = -1, vh = -1;
    for (uint32_t e = 0; e < cnt; e++) {
        size_t at = (size_t)ifd + 2 + (size_t)e * 12;
        uint32_t tag, type, v;
        if (!rd_u16(b, at, be, &tag) || !rd_u16(b, at + 2, be, &type))
            return false;
        if (tag != 256 && tag != 257)
            continue;
        if (type == 3) { /* SHORT, in the value field's first bytes */
            if (!rd_u16(b, at + 8, be, &v))
                return false;
        } else if (type == 4) { /* LONG */
            if (!rd_u32(b, at + 8, be, &v))
                return false;
        } else {
            return false;
        }
        *(tag == 256 ? &vw : &vh) = v;
    }
    if (vw < 0 || vh < 0)
        return false;
    *w = vw;
    *h = vh;
    return true;
}

/* WebP: the VP8 (lossy), VP8L (lossless) or VP8X (extended) chunk */
static bool img_webp(const img_bytes *b, int64_t *w, int64_t *h)
{
    uint32_t x, y;
    if (!has_at(b, 0, "RIFF", 4) || !has_at(b, 8, "WEBP", 4))
        return false;
    if (has_at(b, 12, "VP8 ", 4)) {
        if (!has_at(b, 23, "\x9d\x01\x2a", 3) || !rd_u16(b, 26, false, &x) ||
            !rd_u16(b, 28, false, &y))
            return false;
        *w = x & 0x3fff;
        *h = y & 0x3fff;
        return true;
    }
    if (has_at(b, 12, "VP8L", 4)) {
        uint32_t bits;
        if (b->n < 25 || b->p[20] != 0x2f || !rd_u32(b, 21, false, &bits))
            return false;
        *w = (int64_t)(bits & 0x3fff) + 1;
        *h = (int64_t)((bits >> 14) & 0x3fff) + 1;
        return true;
    }
    if (has_at(b, 12, "VP8X", 4) && b->n >= 30) {
        const unsigned char *q = b->p + 24;
        *w = (int64_t)(q[0] | q[1] << 8 | (uint32_t)q[2] << 16) + 1;
        *h = (int64_t)(q[3] | q[4] << 8 | (uint32_t)q[5] << 16) + 1;
        return true;
    }
    return false;
}

/* JPEG 2000: a JP2 file's ihdr box (inside jp2h), or a raw codestream's
 * SIZ marker (image size minus the offset) */
static bool img_jp2(const img_bytes *b, int64_t *w, int64_t *h)
{
    uint32_t x, y, xo, yo;
    if (has_at(b, 0, "\xff\x4f\xff\x51", 4)) {
        if (!rd_u32(b, 8, true, &x) || !rd_u32(b, 12, true, &y) ||
            !rd_u32(b, 16, true, &xo) || !rd_u32(b, 20, true, &yo) ||
            xo >= x || yo >= y)
            return false;
        *w = x - xo;
        *h = y - yo;
        return true;
    }
    if (!has_at(b, 0, "\0\0\0\x0cjP  \r\n\x87\n", 12))
        return false;
    /* boxes: length (0: to the end; 1: a 64-bit length follows), type */
    size_t at = 12, end = b->n;
    for (int guard = 0; guard < 4096 && at < end; guard++) {
        uint32_t len, hi, lo;
        uint64_t blen, hdr = 8;
        if (!rd_u32(b, at, true, &len))
            return false;
        blen = len;
        if (len == 1) {
            if (!rd_u32(b, at + 8, true, &hi) ||
                !rd_u32(b, at + 12, true, &lo))
                return false;
            blen = (uint64_t)hi << 32 | lo;
            hdr = 16;
        } else if (len == 0) {
            blen = end - at;
        }
        if (blen < hdr || blen > end - at)
            return false;
        if (has_at(b, at + 4, "jp2h", 4)) {
            end = at + (size_t)blen; /* descend into the superbox */
            at += (size_t)hdr;
            continue;
        }
        if (has_at(b, at + 4, "ihdr", 4)) {
            if (!rd_u32(b, at + hdr, true, &y) ||
                !rd_u32(b, at + hdr + 4, true, &x))
                return false;
            *w = x;
            *h = y;
            return true;
        }
        at += (size_t)blen;
    }
    return false;
}

/* Width and height from the container header of the encoded image. */
static bool image_size(const img_bytes *b, int64_t *w, int64_t *h)
{
    return img_png(b, w, h) || img_jpeg(b, w, h) || img_bmp(b, w, h) ||
           img_tiff(b, w, h) || img_webp(b, w, h) || img_jp2(b, w, h) ||
           img_pnm(b, w, h);
}

/* ImageDecoder (encoded_stream uint8 [N]) -> [H, W, C] uint8: C from
 * pixel_format (RGB/BGR 3, Grayscale 1); H and W from the header (BMP,
 * PNG, PNM, JPEG, TIFF, WebP, JPEG 2000) when the bytes are known. */
MP__SHAPE_FN(mp__shape_image_decoder)
{
    const mp__node *n = &g->nodes[node];
    static const char *const pfs[] = {"RGB", "BGR", "Grayscale", NULL};
    const char *pf;
    mp_status es = mp__check_enum(g, node, "pixel_format", "RGB", pfs, &pf);
    if (es)
        return es;
    mp__shape s = {.rank = 3, .d = {-1, -1, -1}};
    if (strcmp(pf, "Grayscale") == 0)
        s.d[2] = 1;
    else if (strcmp(pf, "RGB") == 0 || strcmp(pf, "BGR") == 0)
        s.d[2] = 3;
    const mp__tensor *x = mp__in(g, n, 0);
    int64_t c;
    mp_status st = MP_OK;
    if (x && dtype_in(g, n, 0) == MP_DTYPE_UINT8 &&
        whole_value(g, n, 0, &c) && c > 0) {
        unsigned char *buf = mp__alloc(g->ctx, (size_t)c);
        if (!buf)
            return MP_ERR_NOMEM;
        for (int64_t i = 0; i < c; i++)
            buf[i] = (unsigned char)x->value[i];
        img_bytes b = {buf, (size_t)c};
        int64_t w, h;
        if (image_size(&b, &w, &h) && w >= 0 && h >= 0) {
            s.d[0] = h;
            s.d[1] = w;
        }
        mp__dealloc(g->ctx, buf);
    }
    st = mp__out_set(g, node, 0, MP_DTYPE_UINT8, &s);
    return st ? st : mp__shape_done(g, node);
}
