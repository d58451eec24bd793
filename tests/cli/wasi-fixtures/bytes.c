/* bytes.c — writes bytes that are not UTF-8, control characters, quotes and
 * a multi-byte character, to test --json's string escaping. */
#include <stdio.h>

int main(void) {
    static const unsigned char out[] = {'a', 0xff, 'b', 0xc3, 0xa9, '"', '\\', '\n',
                                        0x01, 0xe2, 0x82, 0x00, 'z', 0xed, 0xa0, 0x80};
    fwrite(out, 1, sizeof out, stdout);
    return 0;
}
