"""The board top (gen/fpga/board/bridge.py) in Amaranth's simulator, driven over its simulated UART.

The host is :class:`gen.fpga.board.protocol.Host`, the very code ``ga2 board run`` uses
on a serial port; here its link sends and receives bits on the simulated ``rx``/
``tx`` lines.  A program with a matrix multiply, a requantisation, a vector add and
stores is loaded with its external memory, run, and its counters, status and whole
external memory read back: they equal the golden model's.
"""
import random

import pytest
from amaranth.sim import Simulator

from ga2_hdl import golden, isa
from ga2_hdl.config import Config
from ga2_hdl.isa import HALT, ErrorCode, make
from gen.fpga.board.protocol import Host, ProtocolError, Status, STATUS_BYTES
from gen.fpga.board.bridge import BoardTop, bridge_problems
from gen.fpga.board.uart import divisor_for

DIVISOR = 4            # clock cycles per UART bit in the simulation (the smallest the UART takes)
EXT_WORDS = 64


class SimUARTLink:
    """A host link over the simulated UART lines of a :class:`BoardTop`."""

    def __init__(self, ctx, top: BoardTop, divisor: int, received: list[int]):
        self.ctx, self.top, self.divisor, self.received = ctx, top, divisor, received

    async def send(self, data: bytes) -> None:
        ctx, bit = self.ctx, self.divisor
        for byte in data:
            for level in [0, *((byte >> i) & 1 for i in range(8)), 1]:
                ctx.set(self.top.rx, level)
                await ctx.tick().repeat(bit)

    async def recv(self, n: int, timeout_bits: int = 200) -> bytes:
        waited = 0
        while len(self.received) < n:
            await self.ctx.tick().repeat(self.divisor)
            waited += 1
            if waited > timeout_bits * max(n, 1):
                raise ProtocolError(f"{len(self.received)} of {n} bytes came back in the simulation")
        out = bytes(self.received[:n])
        del self.received[:n]
        return out


def uart_monitor(top: BoardTop, divisor: int, received: list[int]):
    """A background testbench decoding every byte the board sends on ``tx``."""
    async def monitor(ctx):
        while True:
            await ctx.negedge(top.tx)                        # a start bit begins
            await ctx.tick().repeat(divisor + divisor // 2)  # the middle of data bit 0
            byte = 0
            for i in range(8):
                byte |= ctx.get(top.tx) << i
                await ctx.tick().repeat(divisor)
            assert ctx.get(top.tx) == 1, "the board sent a byte without its stop bit"
            received.append(byte)
    return monitor


def run_board(host_script, ext_words=EXT_WORDS, config=isa.BOOK):
    top = BoardTop(divisor=DIVISOR, ext_words=ext_words, config=config)
    received: list[int] = []
    out = {}

    async def bench(ctx):
        await ctx.tick().repeat(4)
        out["value"] = await host_script(Host(SimUARTLink(ctx, top, DIVISOR, received), chunk=16), ctx)

    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_testbench(uart_monitor(top, DIVISOR, received), background=True)
    sim.add_testbench(bench)
    sim.run()
    return out["value"]


def _program():
    """LD two 4 x 4 int8 matrices, MM, RQ, VADD, AMAX and ST of every result."""
    return [
        make("LD", dst=0, src=0, len=32),
        make("MM", dst=64, A=0, B=16, M=4, K=4, N=4),
        make("RQ", dst=96, src=64, len=16, m=3, s=4),
        make("VADD", dst=112, src1=96, src2=0, len=16),
        make("AMAX", dst=128, src=112, len=16),
        make("ST", src=64, dst=32, len=16),
        make("ST", src=112, dst=48, len=16),
        make("ST", src=128, dst=31, len=1),
        HALT,
    ]


def test_uart_bridge_runs_a_program_like_the_golden_model():
    rng = random.Random(5)
    ext = [rng.randint(-127, 127) & 0xFFFFFFFF for _ in range(32)]
    program = _program()
    want = golden.run(program, ext, ext_words=EXT_WORDS, config=isa.BOOK)
    assert want.error == ErrorCode.OK, want.message

    async def script(host, ctx):
        return await host.run([ins.encode() for ins in program], ext, EXT_WORDS)

    got = run_board(script, config=isa.BOOK)
    assert got.error == want.error and got.error_pc == want.error_pc
    for name, e, g in zip(isa.COUNTER_NAMES, want.counters, got.counters):
        assert g == e, f"counter {name}: expected {e}, got {g}"
    for addr, (e, g) in enumerate(zip(want.ext, got.ext)):
        assert g == e, f"ext[{addr}]: expected {e:#010x}, got {g:#010x}"
    assert len(got.ext) == EXT_WORDS


def test_uart_bridge_reports_a_fault_and_status_while_idle():
    program = [make("LD", dst=0, src=EXT_WORDS - 2, len=4), HALT]     # EXT_RANGE at pc 0
    want = golden.run(program, [], ext_words=EXT_WORDS, config=isa.BOOK)

    async def script(host, ctx):
        before = await host.status()
        await host.load_program([ins.encode() for ins in program])
        await host.start()
        after = await host.status()
        return before, after

    before, after = run_board(script, config=isa.BOOK)
    assert not before.running and not before.halted and before.counters == (0,) * 5
    assert after.halted and not after.running
    assert (after.status, after.status_pc, after.counters) == (want.error, want.error_pc, want.counters)


def test_status_record_round_trip_and_divisor():
    st = Status(True, False, ErrorCode.OVERLAP, 513, [1, 2, 3, 4, 0xFFFFFFFF])
    raw = st.encode()
    assert len(raw) == STATUS_BYTES and Status.decode(raw) == st
    with pytest.raises(ProtocolError):
        Status.decode(raw[:-1])
    assert divisor_for(25e6, 115_200) == 217
    with pytest.raises(ValueError):
        divisor_for(25e6, 10_000_000)


#: a chip with wide ports: 2 scratchpad words and 4 external words per cycle, latency 5
WIDE = Config(name="board_wide", spad_ports=2, ext_port_words=4, lat=5)


def test_the_board_top_follows_a_wide_configuration():
    """The board of a chip with a 4-word external port (its memory in 4 banks, the bridge on lane 0):
    loads and stores that start at every bank offset, like the golden model of that chip."""
    ext_words = 128
    rng = random.Random(7)
    ext = [rng.randint(-127, 127) & 0xFFFFFFFF for _ in range(40)]
    program = [
        make("LD", dst=0, src=3, len=32),             # lane 0 in bank 3: every rotation of the banks
        make("MM", dst=64, A=0, B=16, M=4, K=4, N=4),
        make("RQ", dst=96, src=64, len=16, m=3, s=4),
        make("VADD", dst=112, src1=96, src2=1, len=15),
        make("LD", dst=200, src=37, len=3),           # a partial request (lanes 0-2)
        make("ST", src=64, dst=41, len=16),
        make("ST", src=112, dst=58, len=15),
        make("ST", src=200, dst=77, len=3),
        HALT,
    ]
    want = golden.run(program, ext, ext_words=ext_words, config=WIDE)
    assert want.error == ErrorCode.OK, want.message

    async def script(host, ctx):
        return await host.run([ins.encode() for ins in program], ext, ext_words)

    got = run_board(script, ext_words=ext_words, config=WIDE)
    assert got.error == want.error and got.error_pc == want.error_pc
    for name, e, g in zip(isa.COUNTER_NAMES, want.counters, got.counters):
        assert g == e, f"counter {name}: expected {e}, got {g}"
    for addr, (e, g) in enumerate(zip(want.ext, got.ext)):
        assert g == e, f"ext[{addr}]: expected {e:#010x}, got {g:#010x}"
    book = golden.run(program, ext, ext_words=ext_words, config=isa.BOOK)
    assert book.counters.dma != want.counters.dma           # the wide port's timing, not the book's


def test_a_configuration_the_bridge_cannot_carry_is_refused_before_anything_is_built(refused):
    assert bridge_problems(isa.BOOK) == [] and bridge_problems(WIDE) == []
    assert "the protocol's addresses reach 65536" in bridge_problems(isa.BOOK, ext_words=70_000)[0]
    refused(lambda: BoardTop(divisor=DIVISOR, ext_words=70_000, config=isa.BOOK),
            match="cannot carry the configuration 'book'")
    # one the bridge carries but the chip refuses: refused before the board exists too
    refused(lambda: BoardTop(divisor=DIVISOR, config=isa.BOOK.replace(name="huge_imem", imem_words=1 << 16)),
            match="imem_words=65536")
