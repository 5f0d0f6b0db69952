"""The requantizer: an int32 accumulator back to an int8, as ``isa.requantize``.

    q = clamp(round_half_away(acc * m / 2**s), -127 (0 with relu), 127)

for every int32 ``acc``, every 24-bit ``m`` (the ISA's RQ operand is 24 bits
wide; nothing requires ``m >= 2**23`` here), every 6-bit ``s`` and both values
of ``relu``.

Structure (two stages, one register between them)

* Stage 1, the cycle the operands arrive: the magnitude ``|acc|`` times ``m`` plus a
  rounding bias, without negating ``acc``: ``|acc| = ones + sign`` with ``ones = acc ^
  sign`` (one gate per bit, below 2**31), so the stage computes ``ones * m + offset``, a
  31 x 24 unsigned multiplier and one add, where ``offset = sign * m + bias`` is formed
  beside the multiplier from ``s`` and the sign: ``bias = +2**(s-1)`` for a positive acc,
  ``-2**(s-1)`` for a negative one (0 and -1 for ``s = 0``).  Shifts of 56 and more act as
  56 (every product rounds to 0 there either way).  The biased product (signed, 58 bits),
  the sign, ``s``, ``relu`` and the saturation limit are registered.
* Stage 2, the next cycle (combinational from the registers): ``t``, 8 bits of the biased
  product shifted right by ``s``, is the rounded magnitude
  ``floor((|acc| * m + 2**(s-1)) / 2**s)`` for a positive acc (round half up, that is
  away from zero once the sign is put back) and the rounded magnitude less one for a
  negative acc (``floor((|acc| * m - 2**(s-1)) / 2**s)``), whose ones' complement ``~t``
  is the negated result: no adder and no negation in this stage, only the window and one
  gate.  The magnitude saturates at 127 by one compare of the biased product with the
  smallest that saturates (``128 * 2**s``, or ``127 * 2**s`` for a negative acc, computed
  beside the multiplier and clipped to 2**56, which no biased product reaches); rounding
  the magnitude makes the result symmetric, ``requant(-a) = -requant(a)``, and -128 cannot
  occur.  Negatives become 0 when ``relu`` is set.

So ``q`` is valid :attr:`Requantizer.LATENCY` = 1 cycle after its operands; a
new set of operands may arrive every cycle.

``Requantizer(magnitude_stage=True)`` registers the sign and ``ones`` first (a stage 0
in the cycle the operands arrive), so the multiplier starts from a register: LATENCY = 2.
``split_multiply=True`` multiplies the *signed* accumulator in halves (``acc`` cut at bit 18, its
high half signed; ``m`` at bit 17, so that each partial product is one ECP5 multiplier block, 18 x 18
signed, and no adder after it), registers the four partial products and adds them in the next stage:
one more cycle of latency.  With the magnitude stage, the accumulator then reaches its first register
with no logic (it comes from the scratchpad's block RAM).  The sign goes into the bias instead:
``q = floor((acc * m + b) / 2**s)`` with ``b = 2**(s-1)`` for a positive acc and ``2**(s-1) - 1`` for a
negative one (0 for s = 0), which is round half away from zero for both signs, so the window of the
shifted sum is the result itself.  The low and the high halves' products sit side by side (no adder
between them), so the product has three addends; the biased product and the saturation's sum (the
sign of ``acc * m + b - 128 * 2**s`` for a positive acc, of ``acc * m + b + 127 * 2**s`` for a
negative one, the same stage, so stage 2 only selects) are each added by two levels of carry-save
gates and one carry chain.  The book's RQ engine uses both (it reads its first element in the start
cycle and writes its last in the cycle after its done, :func:`ga2_hdl.isa.trailing_write_cycles`,
so the extra stages cost no cycle: docs/fpga.md).
"""
from amaranth.hdl import Cat, Module, Mux, Signal, Value, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import isa

_RQ = isa.OP_BY_NAME["RQ"]

ACC_BITS = isa.WORD_BITS                     #: the accumulator is a whole signed word
MANTISSA_BITS = _RQ.operand("m").bits        #: 24
SHIFT_BITS = _RQ.operand("s").bits           #: 6
PRODUCT_BITS = ACC_BITS + MANTISSA_BITS      #: ``|acc| <= 2**31``, ``m < 2**24``: the product fits in 56 bits
#: the product plus the rounding bias (at most 2**55 either way): signed, two bits more
BIASED_BITS = PRODUCT_BITS + 2
Q_BITS = 8                                   #: the int8 result
#: with ``split_multiply``, ``|acc|`` and ``m`` are multiplied in halves, the low ones this many bits (an
#: ECP5 multiplier's width, so each partial product is one multiplier block and no adder after it)
MULTIPLY_SPLIT = 18
#: with ``split_multiply`` m is cut at this bit: its low half, extended by a zero to a signed
#: operand, must fit an ECP5 multiplier's 18 signed bits beside acc's signed high half
MANTISSA_SPLIT = MULTIPLY_SPLIT - 1


class Requantizer(wiring.Component):
    """Pipelined requantizer datapath (no control: it computes every cycle).

    Ports
    -----
    acc : In(signed(32))
        The int32 accumulator (cycle k).
    mantissa : In(24)
        m (cycle k).
    shift : In(6)
        s (cycle k).
    relu : In(1)
        Clamp at 0 from below (cycle k).
    q : Out(signed(8))
        The result for cycle k's operands, in cycle k + LATENCY.
    """

    LATENCY = 1

    acc: In(signed(ACC_BITS))
    mantissa: In(MANTISSA_BITS)
    shift: In(SHIFT_BITS)
    relu: In(1)
    q: Out(signed(Q_BITS))

    def __init__(self, *, magnitude_stage: bool = False, split_multiply: bool = False):
        self.magnitude_stage = magnitude_stage
        self.split_multiply = split_multiply
        self.LATENCY = type(self).LATENCY + int(magnitude_stage) + int(split_multiply)
        super().__init__()

    def elaborate(self, platform):
        m = Module()

        mantissa, shift, relu = self.mantissa, self.shift, self.relu
        # the rounding's constants come from s alone (docstring): shifts of PRODUCT_BITS or more
        # round every product to 0, as PRODUCT_BITS does (s_eff); what is registered of s is its
        # thermometer code ``at_least[k] = s_eff >= k``, from which every bit of every constant is
        # a gate of two or three of its bits (_constants): the decode of s is spread over the two
        # cycles, and no register of s drives a whole constant.  RQ's s is the instruction's:
        # constant while it runs
        s_eff = Signal(range(PRODUCT_BITS + 1), name="s_eff")
        at_least = Signal(PRODUCT_BITS + 2, name="at_least")
        m.d.comb += [s_eff.eq(Mux(shift > PRODUCT_BITS, PRODUCT_BITS, shift)),
                     at_least.eq(Cat(1, *(s_eff >= k for k in range(1, PRODUCT_BITS + 2))))]   # s_eff >= 0
        if self.split_multiply:
            return self._elaborate_signed(m, s_eff, at_least)

        # |acc| = ones + negative, with ones = acc ^ sign (the ones' complement of a negative acc:
        # one gate per bit, no carry chain, and below 2**31); the multiply stage adds the missing
        # negative * m to ones * m, so the unit never negates the accumulator
        negative = self.acc < 0
        ones = Signal(ACC_BITS - 1)
        m.d.comb += ones.eq(self.acc[:ACC_BITS - 1] ^ negative.replicate(ACC_BITS - 1))
        if self.magnitude_stage:
            # ---- stage 0: the sign and the ones' complement (and the other operands), registered
            negative, ones, mantissa, relu, s_eff, at_least = _registered(
                m, "_0", negative=negative, ones=ones, mantissa=mantissa, relu=relu, s_eff=s_eff,
                at_least=at_least)
        half, minus_half, limit_positive, limit_negative = _constants(m, at_least)
        offset = Signal(signed(BIASED_BITS), name="offset")         # sign * m + the rounding bias
        m.d.comb += offset.eq(Mux(negative, mantissa, 0) + Mux(negative, minus_half, half))
        limit = Mux(negative, limit_negative, limit_positive)
        biased_sum = ones * mantissa + offset

        # ---- stage 1: |acc| * m + the rounding bias (ones * m + sign * m + bias)
        biased = Signal(signed(BIASED_BITS))
        m.d.sync += biased.eq(biased_sum)
        negative_r, shift_r, relu_r, limit_r = _registered(
            m, "_r", negative=negative, shift=s_eff, relu=relu, limit=limit)
        saturates = biased >= limit_r

        # ---- stage 2: the window, the sign by inverting it, the saturation (one compare)
        t = Signal(8)                      # 8 bits of the biased product shifted by s (arithmetic)
        m.d.comb += t.eq((biased >> shift_r)[:8])
        self._result(m, negative_r, relu_r, saturates, Mux(negative_r, ~t, t))
        return m

    def _elaborate_signed(self, m, s_eff, at_least):
        """``split_multiply``: the signed product ``acc * m`` over three stages (module docstring)."""
        acc, mantissa, relu = self.acc, self.mantissa, self.relu
        if self.magnitude_stage:
            # ---- stage 0: the operands registered as they arrive, with no logic before the
            # registers (the accumulator comes from the scratchpad's block RAM)
            acc, mantissa, relu, s_eff, at_least = _registered(
                m, "_0", acc=acc, mantissa=mantissa, relu=relu, s_eff=s_eff, at_least=at_least)
        negative = acc[-1]
        half, _minus_half, limit_positive, limit_negative = _constants(m, at_least)
        # the bias that rounds acc * m half away from zero under a floor shift: 2**(s-1) for a
        # positive acc, 2**(s-1) - 1 for a negative one (0 for s = 0 either way; docstring)
        bias = Signal(PRODUCT_BITS, name="bias")
        m.d.comb += bias.eq(Mux(negative, _half_less_one(at_least), half))
        # the saturation's sum: biased - 128 * 2**s >= 0 saturates a positive acc, biased + 127 *
        # 2**s < 0 a negative one; both limits clipped at 2**PRODUCT_BITS, which no biased product
        # reaches (|acc * m| < 2**55)
        over_limit = Signal(signed(BIASED_BITS), name="over_limit")
        m.d.comb += over_limit.eq(bias + Mux(negative, limit_negative, -limit_positive))

        # ---- stage 1a: the four partial products of acc's and m's halves, registered: each is one
        # multiplier block from a register into a register, with no adder after it.  acc's high
        # half is signed (14 bits), m's low half 17 bits, so that every product is one ECP5 block
        # (18 x 18 signed) with its unsigned operand extended by a zero
        partial = {}
        for i, a in enumerate((acc[:MULTIPLY_SPLIT], acc[MULTIPLY_SPLIT:].as_signed())):
            for j, b in enumerate((mantissa[:MANTISSA_SPLIT], mantissa[MANTISSA_SPLIT:])):
                partial[i, j] = Signal(signed(len(a) + len(b) + 1) if i else len(a) + len(b),
                                       name=f"partial_{i}{j}")
                m.d.sync += partial[i, j].eq(a * b)
        bias, over_limit, negative, s_eff, relu = _registered(
            m, "_1", bias=bias, over_limit=over_limit, negative=negative, s=s_eff, relu=relu)

        # ---- stage 1: the sums.  acc * m is the sum of three addends: the low halves' product
        # and the high halves' side by side (Cat, no adder), and the two cross products.  The
        # biased product (with the bias) and the saturation's sum (with over_limit) are each the
        # sum of four, added by two levels of carry-save gates (bit by bit, no carry chain) and
        # one carry chain.  Carry-save sums are exact modulo 2**BIASED_BITS, and both true sums fit
        # BIASED_BITS signed
        assert len(partial[0, 0]) == MULTIPLY_SPLIT + MANTISSA_SPLIT
        product_sum, product_carry = _carry_save(
            m, "product", Cat(partial[0, 0], partial[1, 1]).as_signed(),
            partial[0, 1] << MANTISSA_SPLIT, partial[1, 0] << MULTIPLY_SPLIT)
        biased = Signal(signed(BIASED_BITS))
        m.d.sync += biased.eq(_carry_propagate(m, "biased_sum", *_carry_save(
            m, "biased", product_sum, product_carry, bias)))
        past_limit = _carry_propagate(m, "past_limit", *_carry_save(
            m, "past_limit", product_sum, product_carry, over_limit))
        negative_r, shift_r, relu_r, saturates = _registered(
            m, "_r", negative=negative, shift=s_eff, relu=relu,
            saturates=Mux(negative, past_limit[-1], ~past_limit[-1]))

        # ---- stage 2: the window is the signed result (floor shift of the biased product), the
        # saturation registered by stage 1
        t = Signal(8)
        m.d.comb += t.eq((biased >> shift_r)[:8])
        self._result(m, negative_r, relu_r, saturates, t)
        return m

    def _result(self, m, negative, relu, saturates, value):
        """q: 0 for a negative acc under relu, else +-127 when it saturates, else ``value``."""
        with m.If(negative & relu):
            m.d.comb += self.q.eq(0)
        with m.Elif(saturates):
            m.d.comb += self.q.eq(Mux(negative, -isa.INT8_MAX, isa.INT8_MAX))
        with m.Else():
            m.d.comb += self.q.eq(value)


def _half_less_one(at_least) -> Value:
    """2**(s-1) - 1 (0 for s = 0) from the thermometer code of s: bit i is ``s >= i + 2``."""
    return Cat(*(at_least[i + 2] for i in range(PRODUCT_BITS)))


def _constants(m: Module, at_least) -> list[Signal]:
    """The rounding's constants from the thermometer code of the effective shift s
    (``at_least[k] = s >= k``, k = 0 .. PRODUCT_BITS + 1): the bias 2**(s-1) (0 for s = 0), the
    bias of a negative acc -2**(s-1) (-1 for s = 0), and the smallest biased products that
    saturate, ``128 * 2**s`` and ``127 * 2**s``, each clipped to 2**PRODUCT_BITS.  Bit i of
    2**(s-1) is ``s == i + 1``; of -2**(s-1), ``s <= i + 1``; of ``128 * 2**s``, ``s == i - 7``;
    of ``127 * 2**s``, ``i - 6 <= s <= i``; a clipped constant is 2**PRODUCT_BITS alone."""
    ge = lambda k: at_least[k] if k > 0 else 1                  # s >= k (s >= 0 always)
    between = lambda lo, hi: ge(lo) & ~at_least[hi + 1]         # lo <= s <= hi
    # the clipped constants: 128 * 2**s >= 2**PRODUCT_BITS from s = PRODUCT_BITS - 7 on, 127 * 2**s
    # from s = PRODUCT_BITS - 6 on
    clip_positive, clip_negative = at_least[PRODUCT_BITS - 7], at_least[PRODUCT_BITS - 6]
    half = Signal(PRODUCT_BITS, name="half")
    minus_half = Signal(signed(BIASED_BITS), name="minus_half")
    limit_positive = Signal(PRODUCT_BITS + 1, name="limit_128")
    limit_negative = Signal(PRODUCT_BITS + 1, name="limit_127")
    m.d.comb += [
        half.eq(Cat(*(between(i + 1, i + 1) for i in range(PRODUCT_BITS)))),
        minus_half.eq(Cat(*(~at_least[i + 2] for i in range(PRODUCT_BITS)), 1, 1)),
        limit_positive.eq(Cat(*(between(i - 7, i - 7) if i >= 7 else 0 for i in range(PRODUCT_BITS)),
                              clip_positive)),
        limit_negative.eq(Cat(*(between(max(i - 6, 0), i) & ~clip_negative for i in range(PRODUCT_BITS)),
                              clip_negative)),
    ]
    return [half, minus_half, limit_positive, limit_negative]


def _carry_save(m: Module, name: str, a, b, c) -> list[Signal]:
    """A 3:2 compressor over BIASED_BITS bits: ``sum + carry == a + b + c`` modulo
    ``2**BIASED_BITS`` (each operand taken as its two's complement in that width, as an assignment
    extends it), with one gate per bit for each output and no carry chain."""
    ops = [Signal(BIASED_BITS, name=f"{name}_csa_{tag}") for tag in "abc"]
    m.d.comb += [op.eq(value) for op, value in zip(ops, (a, b, c))]
    a, b, c = ops
    total = Signal(BIASED_BITS, name=f"{name}_csa_sum")
    carry = Signal(BIASED_BITS, name=f"{name}_csa_carry")
    m.d.comb += [total.eq(a ^ b ^ c),
                 carry.eq(Cat(0, ((a & b) | (a & c) | (b & c))[:BIASED_BITS - 1]))]
    return [total, carry]


def _carry_propagate(m: Module, name: str, total, carry) -> Signal:
    """The carry-save pair's value, signed, BIASED_BITS wide (one carry chain)."""
    value = Signal(signed(BIASED_BITS), name=name)
    m.d.comb += value.eq(total + carry)
    return value


def _registered(m: Module, suffix: str, **values) -> list[Signal]:
    """A register of each value's shape, named after its keyword and ``suffix``, loaded from it
    every cycle: the values one stage later, in order."""
    regs = [Signal(Value.cast(v).shape(), name=name + suffix) for name, v in values.items()]
    m.d.sync += [r.eq(v) for r, v in zip(regs, values.values())]
    return regs
