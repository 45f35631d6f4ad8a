/* UTF-8: what the writers of text formats (JSON, DOT, HTML, the terminal
 * summary) check before they copy a name taken from a user's file. */
#include "base.h"

size_t mp__utf8_next(const char *s, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned c = p[0], n;
    if (c < 0x80) {
        *cp = c;
        return c ? 1 : 0;
    }
    if (c < 0xC2 || c > 0xF4)
        return 0; /* a continuation byte, overlong, beyond U+10FFFF */
    n = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
    uint32_t v = c & (0x3Fu >> n);
    for (unsigned i = 1; i <= n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0; /* cut short (a NUL stops here too) */
        v = v << 6 | (p[i] & 0x3Fu);
    }
    if ((n == 2 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) ||
        (n == 3 && (v < 0x10000 || v > 0x10FFFF)))
        return 0;
    *cp = v;
    return n + 1;
}

bool mp__utf8_valid(const char *s)
{
    uint32_t cp;
    while (*s) {
        size_t k = mp__utf8_next(s, &cp);
        if (!k)
            return false;
        s += k;
    }
    return true;
}
