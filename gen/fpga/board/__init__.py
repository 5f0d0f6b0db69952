"""The board: the chip behind a UART host bridge, the byte protocol and the UART."""
