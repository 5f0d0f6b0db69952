"""The contracts' assertions in Amaranth's simulator: the same :class:`~ga2_hdl.contracts.unit.UnitContract`
(built with ``formal=False``), its ``start``, instruction and scratchpad read data driven by a
testbench with random legal instructions of any size instead of the solver's free values.

Amaranth 0.5's simulator evaluates ``Assert`` (and ``Assume``) statements and raises
:class:`AssertionError` naming the violated one, so a run that breaks the contract fails there,
with sizes far beyond the bounded proofs' (``len`` up to ``max_len``).
"""
from __future__ import annotations

import random

from amaranth.sim import Simulator

from ga2_hdl import isa
from ga2_hdl.config import Config

__all__ = ["random_instruction", "simulate_contract"]
_DEBUG = False    #: print each instruction before it starts (debugging a failing run)


def random_instruction(iset, mnemonic: str, rng: random.Random, config: Config, max_len: int):
    """A random instruction of ``mnemonic`` the ISA accepts (regions inside the scratchpad)."""
    for _ in range(1000):
        spec = iset.by_name[mnemonic]
        ops = {}
        for o in spec.operands:
            hi = (1 << o.bits) - 1
            if o.legal:
                ops[o.name] = rng.randint(*o.legal)
            elif o.name == "len":
                ops[o.name] = rng.randint(1, max_len)
            elif o.bits == 1:
                ops[o.name] = rng.randrange(2)
            else:
                ops[o.name] = rng.randint(0, min(hi, config.spad_words - 1))
        ins = iset.make(mnemonic, **ops)
        if iset.check(ins, config.ext_words)[0] == isa.ErrorCode.OK:
            return ins
    raise RuntimeError(f"no legal {mnemonic} found")


def simulate_contract(unit: str, config: Config, *, instructions: int = 12, seed: int = 1, max_len: int = 20):
    """Run ``instructions`` random legal instructions of ``unit`` (``rq``, ``vadd``, ``amax``, ``sm``,
    ``dma``) through its contract in Amaranth's simulator; AssertionError when the unit breaks it."""
    from ga2_hdl.contracts.dma import DMAContract
    from ga2_hdl.contracts.unit import UnitContract
    from ga2_hdl.rtl.dma import DMA
    from ga2_hdl.rtl.vector_unit import VectorUnit
    iset = isa.instruction_set(config)
    if unit == "dma":
        spec = DMAContract(DMA(config=config), config, formal=False)
        ops = ["LD", "ST"]
    else:
        mnemonic = unit.upper()
        spec = UnitContract(VectorUnit.engines_of(config)[mnemonic](config=config), config, [mnemonic],
                            formal=False)
        ops = [mnemonic]
    rng = random.Random(seed)
    sim = Simulator(spec)
    sim.add_clock(1e-6, domain="sync")
    dut = spec.unit

    async def bench(ctx):
        for _ in range(instructions):
            ins = random_instruction(iset, rng.choice(ops), rng, config, max_len)
            if _DEBUG: print(ins, iset.busy(ins))
            ctx.set(spec.tb_fresh.as_value(), ins.encode())
            ctx.set(spec.tb_start, 1)
            await ctx.tick()                    # the start cycle begins
            ctx.set(spec.tb_start, 0)
            ctx.set(spec.tb_fresh.as_value(), rng.getrandbits(isa.INSTR_BITS))   # ignored while running
            for _cycle in range(iset.busy(ins) + 5):
                if unit != "dma":
                    ctx.set(spec.tb_rd_data, rng.getrandbits(len(spec.tb_rd_data)))
                await ctx.tick()
                if ctx.get(dut.done):
                    await ctx.tick()            # the done cycle ends: idle again
                    break
            else:
                raise AssertionError(f"{ins}: no done within its busy time")
            for _gap in range(rng.randrange(3)):
                await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
