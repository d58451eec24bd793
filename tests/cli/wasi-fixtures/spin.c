/* spin.c — loops forever (only fuel or a timeout stops it). */
volatile unsigned long counter;

int main(void) {
    for (;;) counter++;
}
