/*
 * board.h - the little the application needs from its board: text output and an exit.
 * Each platform directory implements it with its own start-up and I/O; none of it comes
 * from minirt.
 */
#ifndef BOARD_H
#define BOARD_H

/* Writes a NUL-terminated string to the board's console (a UART, or stdout). */
void board_puts(const char *s);

/* Ends the program with `code` as its exit status (under QEMU: semihosting exit). */
__attribute__((noreturn)) void board_exit(int code);

#endif /* BOARD_H */
