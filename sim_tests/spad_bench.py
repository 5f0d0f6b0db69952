"""Two pieces the scratchpad's tests share: a clocked testbench run on Amaranth's simulator, and
every word of the scratchpad checked against a model."""
from amaranth.sim import Simulator


def simulate(dut, bench, period: float | None = 1e-8) -> None:
    """Run the async testbench ``bench`` on ``dut`` with one clock of ``period`` seconds (``None``:
    no clock, for a bench of combinational checks only)."""
    sim = Simulator(dut)
    if period is not None:
        sim.add_clock(period)
    sim.add_testbench(bench)
    sim.run()


def assert_cells(ctx, dut, model, count: int) -> None:
    """Words 0 .. count - 1 of the scratchpad ``dut`` equal ``model``'s, the first that differs named."""
    for a in range(count):
        assert ctx.get(dut.cell(a)) == model[a], f"word {a}"
