"""The scratchpad (ga2_hdl/rtl/sram.py): synchronous read, write, the AND-OR port multiplexer."""
import random

import pytest

from ga2_hdl import isa
from ga2_hdl.config import PRESETS
from ga2_hdl.rtl.sram import Scratchpad

from sim_tests.spad_bench import assert_cells, simulate

MASTERS = range(3)                  # the chip has three: DMA, matrix unit, vector unit
DMA, MATRIX, VECTOR = MASTERS


def _scratchpad(**kw):
    return Scratchpad(len(MASTERS), **{"config": isa.BOOK, **kw})


def _idle_all(ctx, dut, junk=0):
    """Every master idle, with (possibly non-zero) junk on its address and data lines."""
    for name in MASTERS:
        p = dut.masters[name]
        ctx.set(p.rd_en, 0)
        ctx.set(p.wr_en, 0)
        ctx.set(p.rd_addr, junk & 0xFFF)
        ctx.set(p.wr_addr, (junk >> 12) & 0xFFF)
        ctx.set(p.wr_data, junk)


def test_each_master_reads_and_writes_through_the_mux():
    rng = random.Random(1)
    init = [rng.getrandbits(32) for _ in range(isa.SPAD_WORDS)]
    dut = _scratchpad(init=init)
    model = list(init)

    async def bench(ctx):
        for step in range(600):
            _idle_all(ctx, dut, junk=rng.getrandbits(32))   # idle masters' lines must not leak
            who = dut.masters[rng.choice(MASTERS)]
            op = rng.choice(("read", "write", "both"))
            ra, wa = rng.randrange(isa.SPAD_WORDS), rng.randrange(isa.SPAD_WORDS)
            if op == "both" and ra == wa:
                wa = (wa + 1) % isa.SPAD_WORDS           # never in legal programs
            wd = rng.getrandbits(32)
            if op in ("read", "both"):
                ctx.set(who.rd_en, 1)
                ctx.set(who.rd_addr, ra)
            if op in ("write", "both"):
                ctx.set(who.wr_en, 1)
                ctx.set(who.wr_addr, wa)
                ctx.set(who.wr_data, wd)
            assert not ctx.get(dut.conflict)
            # the debug outputs name the write the memory takes this cycle
            assert ctx.get(dut.write_en) == (op != "read"), f"step {step}: write_en"
            if op != "read":
                assert ctx.get(dut.write_addr) == wa, f"step {step}: write_addr"
            await ctx.tick()
            if op in ("read", "both"):
                for name in MASTERS:                      # rd_data is broadcast
                    assert ctx.get(dut.masters[name].rd_data) == model[ra], f"step {step}: read {ra}"
            if op in ("write", "both"):
                model[wa] = wd
            held = ctx.get(dut.masters[DMA].rd_data)
            _idle_all(ctx, dut, junk=rng.getrandbits(32))
            assert not ctx.get(dut.write_en), f"step {step}: write_en while every master is idle"
            await ctx.tick()
            assert ctx.get(dut.masters[DMA].rd_data) == held, "rd_data must hold while no read is enabled"
        for a in range(0, isa.SPAD_WORDS, 7):
            assert ctx.get(dut.memory.data[a]) == model[a]

    simulate(dut, bench, period=1e-6)


def test_conflict_flag():
    dut = _scratchpad()

    async def bench(ctx):
        _idle_all(ctx, dut)
        ctx.set(dut.masters[DMA].rd_en, 1)
        assert not ctx.get(dut.conflict)
        ctx.set(dut.masters[VECTOR].rd_en, 1)
        assert ctx.get(dut.conflict)
        ctx.set(dut.masters[VECTOR].rd_en, 0)
        ctx.set(dut.masters[MATRIX].wr_en, 1)
        assert not ctx.get(dut.conflict)
        ctx.set(dut.masters[VECTOR].wr_en, 1)
        assert ctx.get(dut.conflict)

    simulate(dut, bench, period=None)


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError):
        Scratchpad(0, config=isa.BOOK)
    with pytest.raises(ValueError):
        _scratchpad(depth=5000)


def test_partitioned_conflict_flag_and_write_outputs():
    """With overlap and partitions (preset ``overlap``: 8 partitions of 512 words) each memory has
    one read and one write port; ``conflict`` flags two masters on one partition's port in a cycle
    (what the issue rule excludes), not masters on different partitions, nor a read and a write of
    one partition (its two ports) by different masters.  ``write_en``/``write_addr`` name a single
    writer's write whatever the idle masters' lines hold.  (The data path:
    sim_tests/rtl/test_overlap.py.)"""
    config = PRESETS["overlap"]
    size = config.spad_partition_words
    dut = _scratchpad(config=config)

    async def bench(ctx):
        _idle_all(ctx, dut, junk=0x00500500)       # idle lines holding one address everywhere
        assert not ctx.get(dut.conflict), "idle"
        for name, addr in zip(MASTERS, (5, size + 5, 3 * size + 7)):   # reads of three partitions
            ctx.set(dut.masters[name].rd_en, 1)
            ctx.set(dut.masters[name].rd_addr, addr)
        assert not ctx.get(dut.conflict), "reads of three partitions"
        ctx.set(dut.masters[DMA].wr_en, 1)          # a write of the partition the matrix unit reads
        ctx.set(dut.masters[DMA].wr_addr, size + 6)
        assert not ctx.get(dut.conflict), "a read and a write of one partition"
        ctx.set(dut.masters[VECTOR].rd_addr, 5)     # two reads of partition 0
        assert ctx.get(dut.conflict), "two reads of one partition"
        ctx.set(dut.masters[VECTOR].rd_en, 0)
        ctx.set(dut.masters[VECTOR].wr_en, 1)       # two writes of partition 1
        ctx.set(dut.masters[VECTOR].wr_addr, 2 * size - 1)
        assert ctx.get(dut.conflict), "two writes of one partition"
        ctx.set(dut.masters[VECTOR].wr_addr, 2 * size)
        assert not ctx.get(dut.conflict), "writes of partitions 1 and 2"
        for name in MASTERS:
            _idle_all(ctx, dut, junk=0x00ABCDEF)
            assert not ctx.get(dut.write_en), "write_en while every master is idle"
            ctx.set(dut.masters[name].wr_en, 1)
            ctx.set(dut.masters[name].wr_addr, 0x246)
            assert (ctx.get(dut.write_en), ctx.get(dut.write_addr)) == (1, 0x246), f"master {name} writes 0x246"

    simulate(dut, bench, period=None)


def test_ported_read_data_holds_while_its_master_does_not_read():
    """With overlap (partitioned: each partition its own memory): a master's ``rd_data`` is the word it
    last read and holds while no master reads that partition's memory (the rule keeps instructions in
    flight together in different partitions), whatever its idle address lines hold, while another
    master reads another partition and one rewrites the word held."""
    init = [0x1000 + a for a in range(isa.SPAD_WORDS)]
    dut = _scratchpad(config=PRESETS["overlap"], init=init)

    async def bench(ctx):
        _idle_all(ctx, dut)
        part = dut.config.spad_partition_words
        assert dut.config.spad_partitions > len(MASTERS)
        for name in MASTERS:                           # master n reads word 10 of partition n
            ctx.set(dut.masters[name].rd_en, 1)
            ctx.set(dut.masters[name].rd_addr, 10 + name * part)
        await ctx.tick()
        for name in MASTERS:
            assert ctx.get(dut.masters[name].rd_data) == 0x1000 + 10 + name * part
        other = len(MASTERS) * part                    # a word of a partition nobody else uses
        for step in range(4):                          # DMA idle (address lines elsewhere), the others read
            ctx.set(dut.masters[DMA].rd_en, 0)         # (its own partition, then the one MATRIX reads)
            ctx.set(dut.masters[DMA].rd_addr, 100 + step + step % 2 * other)
            ctx.set(dut.masters[MATRIX].rd_addr, other + step)
            ctx.set(dut.masters[VECTOR].wr_en, 1)      # and the word the DMA read is rewritten
            ctx.set(dut.masters[VECTOR].wr_addr, 10)
            ctx.set(dut.masters[VECTOR].wr_data, 0xBAD0 + step)
            await ctx.tick()
            assert ctx.get(dut.masters[DMA].rd_data) == 0x1000 + 10, f"step {step}: an idle master's rd_data moved"
            assert ctx.get(dut.masters[MATRIX].rd_data) == 0x1000 + other + step, f"step {step}: a reading master"

    simulate(dut, bench, period=1e-6)


# ==================================================================== wide ports
# The banked scratchpad (ga2_hdl/rtl/sram.py with ``words`` > 1): B consecutive words per access.
# Every cycle one master (the others idle with junk on their lines) reads and/or
# writes a run of B consecutive words from any address, under random lane masks,
# near the top of the address space too (addresses wrap at 4096); a model follows:
# a read gives, the next cycle, the words of the lanes its mask selects (and holds
# when no read is enabled), a write changes exactly the lanes its mask selects.
# Each bank is read only for a lane the mask selects (sram.py), so a lane the mask
# leaves out shows what its bank gave at its last read: the model keeps each bank's
# output too, and every lane is checked.
# ``write_en``/``write_addr``/``write_last`` and ``conflict`` are checked too.

TOP = isa.SPAD_WORDS


@pytest.mark.parametrize("words", [2, 4, 8])          # every bank count of the presets (1.4-3.6 s each)
def test_banked_reads_and_writes_from_any_address(words):
    rng = random.Random(words)
    init = [rng.getrandbits(32) for _ in range(TOP)]
    dut = Scratchpad(3, init=init, words=words, config=isa.BOOK)
    model = list(init)
    assert dut.n_banks == words and dut.memory is None

    def idle(ctx, junk):
        for p in dut.masters:
            ctx.set(p.rd_en, 0)
            ctx.set(p.wr_en, 0)
            ctx.set(p.rd_addr, junk & 0xFFF)
            ctx.set(p.wr_addr, (junk >> 12) & 0xFFF)
            ctx.set(p.rd_mask, junk & ((1 << words) - 1))      # masks without enables: ignored
            ctx.set(p.wr_mask, (junk >> 3) & ((1 << words) - 1))
            for i in range(words):
                ctx.set(p.wr_data[i], junk ^ i)

    async def bench(ctx):
        last_read = None
        bank_out = [0] * words         # each bank's read output: the word of its last read
        for step in range(400):
            idle(ctx, rng.getrandbits(32))
            p = dut.masters[rng.randrange(3)]
            op = rng.choice(("read", "write", "both", "none"))
            near_top = rng.random() < 0.2
            ra = rng.randrange(TOP - words, TOP) if near_top else rng.randrange(TOP)
            wa = rng.randrange(TOP)
            rmask, wmask = rng.getrandbits(words) or 1, rng.getrandbits(words) or 1
            read_addrs = {(ra + i) % TOP for i in range(words) if rmask >> i & 1}
            if op == "both":           # the contract: no word read and written in one cycle
                wmask &= ~sum(1 << i for i in range(words) if (wa + i) % TOP in read_addrs) & ((1 << words) - 1)
                if not wmask:
                    op = "read"
            data = [rng.getrandbits(32) for _ in range(words)]
            if op in ("read", "both"):
                ctx.set(p.rd_en, 1)
                ctx.set(p.rd_addr, ra)
                ctx.set(p.rd_mask, rmask)
            if op in ("write", "both"):
                ctx.set(p.wr_en, 1)
                ctx.set(p.wr_addr, wa)
                ctx.set(p.wr_mask, wmask)
                for i in range(words):
                    ctx.set(p.wr_data[i], data[i])
            assert ctx.get(dut.conflict) == 0
            writing = op in ("write", "both")
            assert ctx.get(dut.write_en) == writing
            if writing:
                assert ctx.get(dut.write_addr) == wa and ctx.get(dut.write_last) == (wa + words - 1) % TOP
            reading = op in ("read", "both")
            want = [model[(ra + i) % TOP] for i in range(words)] if reading else None
            await ctx.tick()
            if writing:
                for i in range(words):
                    if wmask >> i & 1:
                        model[(wa + i) % TOP] = data[i]
            if reading:
                last_read = (want, rmask, ra)
                for i in range(words):
                    if rmask >> i & 1:
                        bank_out[(ra + i) % words] = want[i]
            if last_read is not None:
                got = dut.masters[rng.randrange(3)].rd_data       # broadcast to every master
                want_words, mask, at = last_read
                for i in range(words):
                    if mask >> i & 1:
                        assert ctx.get(got[i]) == want_words[i], f"step {step}: lane {i}"
                    else:                                          # its bank was not read: it holds
                        assert ctx.get(got[i]) == bank_out[(at + i) % words], f"step {step}: unread lane {i}"
        assert_cells(ctx, dut, model, TOP)

    simulate(dut, bench)


@pytest.mark.parametrize("words", [2, 4, 8])
def test_two_masters_at_once_is_a_conflict(words):
    """(Also builds the banked scratchpad of every width in the default suite: 2, 4 and 8 banks.)"""
    dut = Scratchpad(3, words=words, config=isa.BOOK)
    assert dut.n_banks == words and dut.memory is None

    async def bench(ctx):
        ctx.set(dut.masters[0].rd_en, 1)
        ctx.set(dut.masters[2].rd_en, 1)
        assert ctx.get(dut.conflict) == 1
        ctx.set(dut.masters[2].rd_en, 0)
        ctx.set(dut.masters[1].wr_en, 1)
        assert ctx.get(dut.conflict) == 0

    simulate(dut, bench, period=None)


def test_owned_write_stage_forwards_the_word_written_the_cycle_before():
    """The owned scratchpad (the book chip's) registers every write before the memory, so a write
    reaches the block RAM a cycle late; a read then sees exactly what it sees without the stage:
    every write of an earlier cycle (the one just before forwarded: the port's rd_hit and
    rd_forward, the block RAM's word being the old one), never one of its own cycle.  Back-to-back
    random reads and writes of a few addresses by the owner, against a model."""
    rng = random.Random(7)
    words = 16                                   # few addresses: reads hit recent writes often
    init = [rng.getrandbits(32) for _ in range(words)]
    dut = _scratchpad(config=isa.BOOK, depth=words, init=init, owned=True)
    model = list(init)
    hits = {"forwarded": 0, "same cycle": 0, "rd_hit": 0}

    async def bench(ctx):
        last_write = None
        for step in range(800):
            owner = rng.choice(MASTERS)
            _idle_all(ctx, dut, junk=rng.getrandbits(32) & 0xF00F)
            ctx.set(dut.owner, 1 << owner)
            port = dut.masters[owner]
            ra, wa = rng.randrange(words), rng.randrange(words)
            wd = rng.getrandbits(32)
            read, write = rng.random() < 0.8, rng.random() < 0.7
            ctx.set(port.rd_addr, ra)
            ctx.set(port.rd_en, read)
            if write:
                ctx.set(port.wr_en, 1)
                ctx.set(port.wr_addr, wa)
                ctx.set(port.wr_data, wd)
            expected = model[ra]                 # before this cycle's write
            if read and last_write == ra:
                hits["forwarded"] += 1
            if read and write and wa == ra:
                hits["same cycle"] += 1
            await ctx.tick()
            if read:
                hit = ctx.get(port.rd_hit)
                hits["rd_hit"] += hit
                got = ctx.get(port.rd_forward) if hit else ctx.get(port.rd_data)
                assert got == expected, f"step {step}: read of {ra}: expected {expected:#x}, got {got:#x}"
            if write:
                model[wa] = wd
            last_write = wa if write else None
        _idle_all(ctx, dut)
        await ctx.tick()                         # the last write reaches the memory
        await ctx.tick()
        for a in range(words):
            assert ctx.get(dut.memory.data[a]) == model[a], f"word {a}"

    simulate(dut, bench, period=1e-6)
    assert hits["forwarded"] > 20 and hits["same cycle"] > 5 and hits["rd_hit"] == hits["forwarded"], hits


@pytest.mark.parametrize("words", [2, 4, 8])
def test_owned_banked_reads_the_owners_address_every_cycle(words):
    """Owned and banked (the wide chips without overlap): every bank reads the owner's address in
    every cycle, whatever the masters' read enables and masks, so every lane of the next cycle's
    read data is the word at the owner's address + lane; writes follow the write enables and masks
    as without ``owned``."""
    rng = random.Random(50 + words)
    init = [rng.getrandbits(32) for _ in range(TOP)]
    dut = Scratchpad(3, config=isa.BOOK, init=init, words=words, owned=True)
    model = list(init)
    assert dut.owned and dut.n_banks == words

    async def bench(ctx):
        want = None
        for step in range(300):
            owner = rng.randrange(3)
            ctx.set(dut.owner, 1 << owner)
            for p in dut.masters:
                ctx.set(p.rd_en, 0)
                ctx.set(p.wr_en, 0)
                ctx.set(p.rd_addr, rng.randrange(TOP))
                ctx.set(p.wr_addr, rng.randrange(TOP))
                ctx.set(p.rd_mask, rng.getrandbits(words))
                ctx.set(p.wr_mask, rng.getrandbits(words))
            p = dut.masters[owner]
            ra = rng.randrange(TOP - words, TOP) if rng.random() < 0.2 else rng.randrange(TOP)
            ctx.set(p.rd_addr, ra)
            ctx.set(p.rd_en, rng.random() < 0.5)            # the read happens either way
            wa, wmask = rng.randrange(TOP), rng.getrandbits(words) or 1
            read_addrs = {(ra + i) % TOP for i in range(words)}
            wmask &= ~sum(1 << i for i in range(words) if (wa + i) % TOP in read_addrs) & ((1 << words) - 1)
            writing = bool(wmask) and rng.random() < 0.5
            data = [rng.getrandbits(32) for _ in range(words)]
            if writing:
                ctx.set(p.wr_en, 1)
                ctx.set(p.wr_addr, wa)
                ctx.set(p.wr_mask, wmask)
                for i in range(words):
                    ctx.set(p.wr_data[i], data[i])
            assert ctx.get(dut.conflict) == 0 and ctx.get(dut.write_en) == writing
            if writing:                          # the masters' write of this cycle (the banks take it later)
                assert ctx.get(dut.write_addr) == wa and ctx.get(dut.write_last) == (wa + words - 1) % TOP
            now = [model[(ra + i) % TOP] for i in range(words)]
            await ctx.tick()
            if writing:
                for i in range(words):
                    if wmask >> i & 1:
                        model[(wa + i) % TOP] = data[i]
            got = dut.masters[rng.randrange(3)].rd_data
            assert [ctx.get(got[i]) for i in range(words)] == now, f"step {step}"
        for p in dut.masters:
            ctx.set(p.wr_en, 0)
        await ctx.tick()                        # the write stage: the last write reaches its banks
        assert_cells(ctx, dut, model, TOP)

    simulate(dut, bench)


@pytest.mark.parametrize("words", [2, 4, 8])
def test_owned_banked_write_stage_forwards_the_words_written_the_cycle_before(words):
    """The owned banked scratchpad (the wide chips without overlap) registers each bank's write
    (after the write rotator and the row adder) before the block RAM, so a write reaches its banks
    a cycle late; a read then sees exactly what it sees without the stage: every write of an
    earlier cycle (the one just before forwarded by the banks' transparent read ports), never one
    of its own cycle.  Back-to-back random reads and masked writes from any address of a few words
    (they wrap at the top), by the owner, against a model."""
    rng = random.Random(70 + words)
    depth = 4 * words                           # few rows: reads hit recent writes often
    init = [rng.getrandbits(32) for _ in range(depth)]
    dut = Scratchpad(3, config=isa.BOOK, depth=depth, init=init, words=words, owned=True)
    model = list(init)
    hits = {"forwarded": 0, "same cycle": 0}

    async def bench(ctx):
        last_written = set()
        for step in range(600):
            owner = rng.randrange(3)
            ctx.set(dut.owner, 1 << owner)
            for p in dut.masters:
                ctx.set(p.rd_en, 0)
                ctx.set(p.wr_en, 0)
                ctx.set(p.rd_addr, rng.randrange(depth))
                ctx.set(p.wr_addr, rng.randrange(depth))
                ctx.set(p.wr_mask, rng.getrandbits(words))
            p = dut.masters[owner]
            ra, wa = rng.randrange(depth), rng.randrange(depth)
            wmask = rng.getrandbits(words) or 1
            writing = rng.random() < 0.7
            data = [rng.getrandbits(32) for _ in range(words)]
            ctx.set(p.rd_addr, ra)
            ctx.set(p.rd_en, 1)
            if writing:
                ctx.set(p.wr_en, 1)
                ctx.set(p.wr_addr, wa)
                ctx.set(p.wr_mask, wmask)
                for i in range(words):
                    ctx.set(p.wr_data[i], data[i])
            read_addrs = {(ra + i) % depth for i in range(words)}
            written = {(wa + i) % depth for i in range(words) if wmask >> i & 1} if writing else set()
            hits["forwarded"] += bool(read_addrs & last_written)
            hits["same cycle"] += bool(read_addrs & written)
            now = [model[(ra + i) % depth] for i in range(words)]     # before this cycle's write
            await ctx.tick()
            for i in range(words):
                if writing and wmask >> i & 1:
                    model[(wa + i) % depth] = data[i]
            got = dut.masters[rng.randrange(3)].rd_data
            assert [ctx.get(got[i]) for i in range(words)] == now, f"step {step}"
            last_written = written
        for p in dut.masters:
            ctx.set(p.wr_en, 0)
        await ctx.tick()                        # the last write reaches its banks
        assert_cells(ctx, dut, model, depth)

    simulate(dut, bench)
    assert hits["forwarded"] > 100 and hits["same cycle"] > 100, hits
