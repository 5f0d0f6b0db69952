"""Icarus' form of the exported Verilog: the same design, fewer events per simulated cycle.

Icarus Verilog (``vvp``) pays for every behavioural statement it executes (each variable
read is a C++ ``dynamic_cast``, about 600 machine instructions; a store about 1,500 with
its propagation) and for every continuous assignment it re-evaluates (an adder or a
zero-extension is computed bit by bit, about 2,500 instructions for 33 bits), whatever
the value.  Yosys' Verilog, as Amaranth writes it, has one ``always @*`` process per
signal, its next-state logic as continuous assignments, and one ``q <= \\$n ;`` per
register at every edge.  :func:`icarus_form` rewrites the export into a text Icarus runs
with less work and the same behaviour, cycle for cycle and bit for bit.  The Icarus
runner (``gen/sim/verilog_sim.py``) compiles this form; Verilator, CXXRTL, ``ga2 verilog``
and the lint see the export as it is.

Ten rewrites, in this order, each measured with valgrind's instruction count of ``vvp``
(whole runs of three and of 27 of the chapter's programs; ``docs/verilog.md``, "Written
for event-driven simulators"):

* :func:`event_gated` -- each register waits for the next clock edge only after its
  next state changed: ``always begin @(posedge clk); q <= \\$n ; @(\\$n ); end``.  An idle
  register costs nothing per cycle (no flag to test, no process woken at the edge).
* :func:`gate_rom_reads` -- a read-only memory's read port (the exp table) in the same form,
  waiting for its address to change.
* :func:`inline_arithmetic` -- an adder, subtracter or multiplier ``assign \\$n = a + b;`` read
  by a process as ``x = \\$n [k:0];`` (``x`` at most k+1 bits wide) is computed in that
  statement instead: ``x = a + b;``, word-wise and only when the process runs and takes that
  branch.
* :func:`purge_dead` -- continuous assignments and processes whose results nothing reads
  (struct field views, copies of ports, the adders the previous rewrite left unused).
  Not in a build that writes waveforms: there every named signal stays visible.
* :func:`process_locals` -- a process that assigns its target ten or more times builds it
  in a local copy and stores it once, so its listeners see one change, not one per part.
* :func:`explicit_sensitivity` -- ``always @*`` with the signals it reads written out, so
  the dummy read Yosys puts first in every process (``if (\\$auto$...dump_module$1 )
  begin end``, which makes Icarus run the process at time 0) becomes a sensitivity
  instead of a variable read at every wake-up.
* :func:`fuse_next_state` -- a register's next-state process evaluated by the register's
  own process at the edge, which then waits for the inputs of that logic to change: one
  process instead of two.  Not in a waveform build (the next-state nets keep their values there).
* :func:`guard_lanes` -- a memory's per-lane writes under one test of their enable.
* :func:`wait_for_enable` -- a memory port that is one ``if (en) ...`` sleeps in
  ``wait (en)`` until it is used.
* :func:`merge_module_clocked` -- the remaining clocked blocks of a module (memory ports)
  as one process: one wake-up per edge instead of one per block.

What they rely on (true of Yosys' output driven by our testbench): all clocked blocks use
non-blocking assignments; the chip's inputs change by non-blocking assignments, so no
next-state signal changes in a time step with a rising edge before the clocked processes
have run; nothing reads a net through a hierarchical reference except the testbench's
scratchpad array (a memory: never removed).
"""
from __future__ import annotations

import re

__all__ = ["icarus_form", "event_gated", "inline_arithmetic", "purge_dead", "process_locals", "explicit_sensitivity",
           "fuse_next_state", "guard_lanes", "merge_module_clocked", "gate_rom_reads",
           "wait_for_enable", "single_if", "written_outside_initial"]

#: one module: header line, body, ``endmodule``
_MODULE = re.compile(r"(^module [^\n]*\n)(.*?)(^endmodule\n)", re.S | re.M)
#: an identifier as Yosys writes it: escaped (``\$12 ``, ending with a space) or plain
_IDENT = r"(?:\\\S+ |[A-Za-z_][\w$]*)"
_TOKEN = re.compile(r"\\\S+ |\$?[A-Za-z_][\w$]*")
_LITERAL = re.compile(r"\d*'[sS]?[bdhoBDHO][0-9a-fA-FxzXZ_?]+")
_COMMENT = re.compile(r"/\*.*?\*/|\(\*.*?\*\)")
_KEYWORDS = {"if", "else", "begin", "end", "case", "casez", "casex", "endcase", "default", "signed"}

#: a merged register block of the export (``merge_clocked_blocks``): only ``q <= \$n ;`` statements
_REGISTER_BLOCK = re.compile(r"  always @\(posedge (\S+)\) begin\n((?:    [^\n]*\n)+?)  end\n")
_REGISTER_STATEMENT = re.compile(rf"    ([^\n]+?) <= ({_IDENT});\n")
_REGISTER_ALONE = re.compile(rf"  always @\(posedge (\S+)\)\n    ([^\n]+?) <= ({_IDENT});\n")
#: any clocked block with a ``begin ... end`` body
_CLOCKED = re.compile(r"  always @\(posedge (\S+)\) begin\n((?:    [^\n]*\n)*?)  end\n")
#: a combinational process, as Yosys writes it (the first statement reads the time-0 trigger)
_PROCESS = re.compile(r"  always @\* begin\n    if \((\\\$auto\$verilog_backend\S* )\) begin end\n"
                      r"((?:    [^\n]*\n)*?)  end\n")
_ANY_PROCESS = re.compile(r"  always @(?:\*|\([^\n]*\)) begin\n(?:    [^\n]*\n)*?  end\n")
_DECL = re.compile(r"^  (wire|reg|input|output|inout)\b([^;]*);\n", re.M)
_WIDTH_DECL = re.compile(rf"^  (?:wire|reg|input|output|inout)( signed)? (?:\[(\d+):(\d+)\] )?({_IDENT})"
                         r"(?: ?=[^;]*)?;\n", re.M)
_ASSIGN = re.compile(rf"^  assign ({_IDENT}) ?= ([^\n]*);\n", re.M)
_PLAIN = rf"(?:{_IDENT}(?: ?\[\d+(?::\d+)?\])?|\d+'[hdb][0-9a-fA-F]+)"
_TERM = rf"{_PLAIN}|\$signed\({_PLAIN} ?\)"
_ARITHMETIC = re.compile(rf"^  assign (\\\$\d+ ) = ({_TERM}) ([-+*]) ({_TERM});\n", re.M)
_USE = re.compile(rf"^(\s+)({_IDENT})( ?\[(\d+)(?::(\d+))?\])? = (\\\$\d+ )(\[(\d+):0\])?;$", re.M)
_TARGET = re.compile(rf"\s*({_IDENT}) ?(\[[0-9:]+\] )?= ")


def _per_module(text: str, rewrite) -> str:
    return _MODULE.sub(lambda m: m.group(1) + rewrite(m.group(2)) + m.group(3), text)


def _reads(text: str) -> dict[str, int]:
    """How often each identifier occurs in ``text`` (comments, attributes and literals left out)."""
    counts: dict[str, int] = {}
    for token in _TOKEN.findall(_LITERAL.sub(" ", _COMMENT.sub(" ", text))):
        token = token.strip()
        if not token.startswith("$") and token not in _KEYWORDS:
            counts[token] = counts.get(token, 0) + 1
    return counts


def event_gated(text: str) -> str:
    """Each register of a register block assigned at an edge only after its next state changed.

    ``q <= \\$n ;`` at every edge becomes ``always begin @(posedge clk); q <= \\$n ; @(\\$n ); end``:
    after an edge ``q`` equals the ``\\$n`` it was given and nothing else assigns it, so an edge
    before ``\\$n`` changes again would assign the value ``q`` holds.  The process waits for that
    change only after its assignment, so a change caused by the edge's own updates (a counter's
    next value) is seen.  The first edge always assigns.  Blocks with other statements (memory
    ports) are left as they are.
    """
    def gated(block: re.Match) -> str:
        body = block.group(2)
        statements = _REGISTER_STATEMENT.findall(body)
        if not statements or "".join(f"    {q} <= {n};\n" for q, n in statements) != body:
            return block.group(0)
        clock = block.group(1)
        return "".join(f"  always begin @(posedge {clock}); {q} <= {n}; @({n}); end\n" for q, n in statements)
    text = _REGISTER_BLOCK.sub(gated, text)
    # a register Yosys writes alone, without begin ... end: the same rewrite
    return _REGISTER_ALONE.sub(lambda r: f"  always begin @(posedge {r.group(1)}); {r.group(2)} <= {r.group(3)}; "
                                         f"@({r.group(3)}); end\n", text)


#: a read port with neither enable nor write: ``always @(posedge clk) begin q <= mem[addr]; end``
_ROM_READ = re.compile(rf"  always @\(posedge (\S+)\) begin\n    ({_IDENT}) <= ({_IDENT}) ?\[({_IDENT})\];\n  end\n")


def written_outside_initial(text: str, memory: str) -> bool:
    """Whether any statement of ``text`` outside an ``initial`` block writes a word of ``memory``."""
    outside_initial = re.sub(r"^  initial begin\n.*?^  end\n", "", text, flags=re.S | re.M)
    return re.search(rf"(?<![\w$\\]){re.escape(memory)} ?\[[^\n]*?\]\s*(?:<=|=)(?!=)", outside_initial) is not None


def gate_rom_reads(text: str) -> str:
    """A read-only memory's read port reads again only after its address changed.

    A memory that only its ``initial`` block writes keeps its words, so the word at an
    unchanged address is the one the port already holds: the port becomes
    ``always begin @(posedge clk); q <= rom[addr]; @(addr); end`` (:func:`event_gated`'s form).
    """
    def rewrite(body: str) -> str:
        def gated(r: re.Match) -> str:
            clock, out, memory = r.group(1), r.group(2), r.group(3).strip()
            if written_outside_initial(body, memory):
                return r.group(0)
            return f"  always begin @(posedge {clock}); {out} <= {r.group(3)}[{r.group(4)}]; @({r.group(4)}); end\n"
        return _ROM_READ.sub(gated, body)
    return _per_module(text, rewrite)


def inline_arithmetic(text: str) -> str:
    """Sums, differences and products read by a process as ``x = \\$n [k:0];`` computed there.

    ``assign \\$n = a + b;`` (``-`` or ``*``; each operand a name, a part-select or a sized
    constant, or one of those in ``$signed(...)``) read as ``x = \\$n [k:0];`` or ``x = \\$n ;``
    with the target ``x`` at most as wide as what is read becomes ``x = a + b;``.  The low bits
    of a sum, a difference or a product depend only on the low bits of its operands, and
    extending an operand (with zeros or its sign) to any width at least the target's keeps
    them: the statement evaluates the expression in at least the target's width and keeps
    those bits, which are the ones ``\\$n`` holds.  An operand ``$signed(\\$p )`` where
    ``\\$p`` is itself a product ``$signed(c) * $signed(d)`` wide enough to hold it exactly
    (``c`` and ``d`` together no wider than ``\\$p``) is written as that product, whose signed
    value is the same in any width.  Uses of any other form keep reading ``\\$n``.
    """
    def rewrite(body: str) -> str:
        width: dict[str, int] = {}
        for d in _WIDTH_DECL.finditer(body):
            width[d.group(4).strip()] = int(d.group(2)) - int(d.group(3)) + 1 if d.group(2) else 1

        def operand_width(term: str) -> int | None:
            inner = term[len("$signed("):-1] if term.startswith("$signed(") else term
            if inner[0].isdigit():
                return int(inner.split("'")[0])
            part = re.search(r"\[(\d+)(?::(\d+))?\]$", inner)
            if part:
                return int(part.group(1)) - int(part.group(2) or part.group(1)) + 1
            return width.get(re.match(_IDENT, inner).group(0).strip())

        found: dict[str, tuple[str, str, str]] = {}
        for a in _ARITHMETIC.finditer(body):
            terms = (a.group(2), a.group(4))
            if all(operand_width(x) is not None for x in terms):
                found[a.group(1).strip()] = (terms[0], a.group(3), terms[1])
        sums: dict[str, str] = {}
        for name, (x, op, y) in found.items():
            operands = []
            for term in (x, y):
                inner = term[len("$signed("):-1].strip() if term.startswith("$signed(") else None
                product = found.get(inner) if inner else None
                if (product and product[1] == "*" and all(p.startswith("$signed(") for p in (product[0], product[2]))
                        and operand_width(product[0]) + operand_width(product[2]) <= width.get(inner, 0)):
                    operands.append(f"({product[0]} * {product[2]})")
                else:
                    operands.append(term)
            sums[name] = f"{operands[0]} {op} {operands[1]}"

        def use(u: re.Match) -> str:
            target, part, source = u.group(2).strip(), u.group(3), u.group(6).strip()
            if source not in sums or target not in width:
                return u.group(0)
            if part:
                target_width = int(u.group(4)) - int(u.group(5)) + 1 if u.group(5) is not None else 1
            else:
                target_width = width[target]
            read_width = int(u.group(8)) + 1 if u.group(7) else width.get(source, 0)
            if target_width > read_width or read_width > width.get(source, 0):
                return u.group(0)
            return f"{u.group(1)}{u.group(2)}{part or ''} = {sums[source]};"
        return _PROCESS.sub(lambda p: _USE.sub(use, p.group(0)), body)
    return _per_module(text, rewrite)


def purge_dead(text: str) -> str:
    """Continuous assignments and processes whose results nothing in their module reads, removed.

    A net driven by ``assign`` (or every target of an ``always @*`` process) that is no port
    of its module and occurs nowhere else in it (not in an expression, a process, a clocked
    block or an instance's connections) is removed with its declaration, until none is left.
    """
    def rewrite(body: str) -> str:
        ports: set[str] = set()
        for d in _DECL.finditer(body):
            if d.group(1) in ("input", "output", "inout"):
                ports.update(_reads(d.group(2)))
        while True:
            counts = _reads(_DECL.sub("", body))
            dead = {a.group(1).strip() for a in _ASSIGN.finditer(body)
                    if a.group(1).strip() not in ports and counts.get(a.group(1).strip(), 0) == 1}

            def drop_process(p: re.Match) -> str:
                block = p.group(0)
                targets = {t.group(1).strip() for line in block.splitlines()[1:-1]
                           if (t := _TARGET.match(_COMMENT.sub(" ", line)))}
                inside = _reads(block)
                if targets and all(t not in ports and counts.get(t, 0) == inside.get(t, 0) for t in targets):
                    dead.update(targets)
                    return ""
                return block
            new = _ANY_PROCESS.sub(drop_process, body)
            new = _ASSIGN.sub(lambda a: "" if a.group(1).strip() in dead else a.group(0), new)

            def drop_declaration(d: re.Match) -> str:
                names = list(_reads(d.group(2)))
                return "" if d.group(1) in ("wire", "reg") and names and names[-1] in dead else d.group(0)
            new = _DECL.sub(drop_declaration, new)
            if new == body:
                return body
            body = new
    return _per_module(text, rewrite)


#: the local copy of a process's target (:func:`process_locals`)
LOCAL = "\\icarus$local{} "


def process_locals(text: str, at_least: int = 10) -> str:
    """A process that assigns a target ``at_least`` times builds it in a local copy, stored once.

    Yosys' processes assign a default (``\\$54 = walk;``) and then parts of it in branches;
    Icarus propagates every store to whatever listens to the target (other processes, the
    register waiting for a new next state).  Built in ``\\icarus$localN`` (which nothing
    listens to) and stored at the end of the process, the target changes at most once per
    run, to the same final value.
    """
    count = 0

    def rewrite(body: str) -> str:
        nonlocal count
        width = {d.group(4).strip(): (d.group(1) or "", d.group(2), d.group(3)) for d in _WIDTH_DECL.finditer(body)}
        declarations: list[str] = []

        def localise(p: re.Match) -> str:
            nonlocal count
            block = p.group(0)
            assigned: dict[str, int] = {}
            for line in block.splitlines()[2:-1]:
                if (t := _TARGET.match(_COMMENT.sub(" ", line))):
                    assigned[t.group(1).strip()] = assigned.get(t.group(1).strip(), 0) + 1
            for target, n in assigned.items():
                if n < at_least or target not in width or not target.startswith("\\"):
                    continue
                count += 1
                local = LOCAL.format(count)
                signed, high, low = width[target]
                declarations.append(f"  reg{signed} {f'[{high}:{low}] ' if high else ''}{local};\n")
                block = block.replace(target + " ", local)
                block = block[:-len("  end\n")] + f"    {target} = {local};\n  end\n"
            return block
        body = _PROCESS.sub(localise, body)
        first = body.find("\n  always ") + 1          # declared before the first process
        return body[:first] + "".join(declarations) + body[first:] if declarations else body
    return _per_module(text, rewrite)


def explicit_sensitivity(text: str) -> str:
    """``always @*`` processes with their sensitivity written out, the time-0 trigger in it.

    Yosys makes each process read a register that changes once at time 0 (so that Icarus runs
    every process then); listed as a sensitivity it still does, without a variable read at
    every later wake-up.  The list is every name the process reads (assignment targets that
    are not read are left out, as ``@*`` does).  Processes that read a memory keep ``@*``.
    """
    def rewrite(body: str) -> str:
        memories = {m.group(1).strip() for m in re.finditer(rf"^  reg (?:\[[^\]]*\] )?({_IDENT}) ?\[", body, re.M)}

        def explicit(p: re.Match) -> str:
            trigger, statements = p.group(1), p.group(2)
            reads: list[str] = []
            for line in statements.splitlines():
                line = _LITERAL.sub(" ", _COMMENT.sub(" ", line))
                target = _TARGET.match(line)
                for name in _reads(line[target.end():] if target else line):
                    if name not in reads:
                        reads.append(name)
            if any(r in memories for r in reads):
                return p.group(0)
            reads = [r for r in reads if not r.startswith("\\icarus$")]      # locals change only here
            names = [trigger.strip()] + reads
            sensitivity = " or ".join(n + " " if n.startswith("\\") else n for n in names)
            return f"  always @({sensitivity}) begin\n{statements}  end\n"
        return _PROCESS.sub(explicit, body)
    return _per_module(text, rewrite)


#: a register's process from :func:`event_gated`
_REGISTER_PROCESS = re.compile(r"^  always begin @\(posedge (\S+)\); ([^\n]+?) <= (\\\$\d+ ); @\(\3\); end\n", re.M)
#: a process with its sensitivity written out (:func:`explicit_sensitivity`)
_LISTED_PROCESS = re.compile(r"  always @\(([^\n]*)\) begin\n((?:    [^\n]*\n)*?)  end\n")
#: the next state of a fused register (:func:`fuse_next_state`)
NEXT = "\\icarus$next{} "


def fuse_next_state(text: str) -> str:
    """A register's next-state process computed by the register's own process, at the edge.

    Where a register's next state ``\\$n`` is the one target of one process and nothing else
    reads it, the register's process evaluates that process's statements itself at the
    edge (into ``\\icarus$nextN``), assigns the register, and then waits for any signal the
    statements read to change: ``always begin @(posedge clk); <statements>; q <= next;
    @(a or b ...); end``.  The statements read at the edge the values the process would have
    settled on, and a register whose inputs did not change since it was assigned would be
    given the value it holds.  One process instead of two, and no store that other
    processes listen to.  Run after :func:`explicit_sensitivity` (it takes that list).
    """
    count = 0

    def rewrite(body: str) -> str:
        nonlocal count
        processes: dict[str, re.Match] = {}
        for p in _LISTED_PROCESS.finditer(body):
            if "posedge" in p.group(1):
                continue
            targets = {t.group(1).strip() for line in p.group(2).splitlines()
                       if (t := _TARGET.match(_COMMENT.sub(" ", line)))}
            if len(targets) == 1:
                processes[targets.pop()] = p
        counts = _reads(_DECL.sub("", body))
        fused: list[tuple[str, str]] = []

        def fuse(r: re.Match) -> str:
            nonlocal count
            clock, register, state = r.group(1), r.group(2), r.group(3).strip()
            p = processes.get(state)
            if p is None or counts.get(state, 0) != _reads(p.group(0)).get(state, 0) + 2:
                return r.group(0)
            sensitivity = [s.strip() for s in p.group(1).split(" or ") if "dump_module" not in s]
            declaration = re.search(rf"^  reg( signed)? (\[\d+:\d+\] )?{re.escape(state)} ;\n", body, re.M)
            if not sensitivity or declaration is None:
                return r.group(0)
            count += 1
            local = NEXT.format(count)
            fused.append((p.group(0), declaration.group(0)))
            statements = "".join("  " + line + "\n" for line in p.group(2).replace(state + " ", local).splitlines())
            wait = " or ".join(s + " " if s.startswith("\\") else s for s in sensitivity)
            return (f"  reg{declaration.group(1) or ''} {declaration.group(2) or ''}{local};\n"
                    f"  always begin @(posedge {clock});\n{statements}    {register} <= {local};\n"
                    f"    @({wait});\n  end\n")
        body = _REGISTER_PROCESS.sub(fuse, body)
        for process, declaration in fused:
            body = body.replace(process, "", 1).replace(declaration, "", 1)
        return body
    return _per_module(text, rewrite)


#: two or more consecutive lane writes of a clocked block, each under one bit of the same enable
_LANES = re.compile(rf"(?:    if \(({_IDENT})\[\d+\]\)\n      [^\n]*<=[^\n]*;\n)(?:    if \(\1\[\d+\]\)\n      [^\n]*<=[^\n]*;\n)+")


def guard_lanes(text: str) -> str:
    """A memory's per-lane writes (``if (en[0]) ...; if (en[1]) ...;``) under one ``if (|en)``.

    An edge without a write then reads the enable once instead of once per lane; with any
    bit set the lanes are tested as before (a lane whose bit is 0 or x is not written, and
    with no bit 1 none is).
    """
    def guarded(run: re.Match) -> str:
        inner = "".join("  " + line + "\n" for line in run.group(0).splitlines())
        return f"    if (|{run.group(1)}) begin\n{inner}    end\n"
    return _LANES.sub(guarded, text)


def wait_for_enable(text: str) -> str:
    """A clocked block that is one ``if (en) ...`` sleeps until ``en`` is set.

    ``always @(posedge clk) begin if (en) ...; end`` becomes
    ``always begin wait (en); @(posedge clk); if (en) ...; end``: while ``en`` is 0 (a memory
    port not used) nothing runs at the edges; once it is 1 the block waits for the next edge
    and tests ``en`` there as before.  ``wait`` passes at once while ``en`` stays 1.
    """
    def waiting(b: re.Match) -> str:
        enable = single_if(b.group(2))
        if enable is None:
            return b.group(0)
        return f"  always begin wait ({enable}); @(posedge {b.group(1)});\n{b.group(2)}  end\n"
    return _CLOCKED.sub(waiting, text)


def single_if(statements: str) -> str | None:
    """The condition of a block's statements (indented four) that are one ``if (c) ...``, else None."""
    lines = statements.splitlines()
    head = re.fullmatch(r"    if \((.+)\)( begin)?", lines[0]) if lines else None
    if head is None:
        return None
    rest = lines[1:]
    if head.group(2):
        single = rest and rest[-1] == "    end" and all(line.startswith("      ") for line in rest[:-1])
    else:
        single = len(rest) == 1 and rest[0].startswith("      ")
    return head.group(1) if single else None


def merge_module_clocked(text: str) -> str:
    """All ``always @(posedge CLK) begin ... end`` blocks of a module as one block per clock.

    Their statements are non-blocking assignments (memory ports, Yosys' registers), so their
    order within one edge does not matter; the merged block goes at the end of the module,
    after every declaration.  A block with a blocking assignment is left as it is.
    """
    def rewrite(body: str) -> str:
        blocks: dict[str, list[str]] = {}

        def take(b: re.Match) -> str:
            if re.search(r"[^<=!>]=[^=]", b.group(2).replace("<=", "")):
                return b.group(0)           # a blocking assignment: order matters, left alone
            blocks.setdefault(b.group(1), []).append(b.group(2))
            return ""
        body = _CLOCKED.sub(take, body)
        for clock, statements in blocks.items():
            body += f"  always @(posedge {clock}) begin\n" + "".join(statements) + "  end\n"
        return body
    return _per_module(text, rewrite)


def icarus_form(text: str, *, waveform: bool = False) -> str:
    """The export as Icarus compiles it (see the module's docstring); ``waveform``: keep every
    named signal and its value (no :func:`purge_dead`, no :func:`fuse_next_state`), for a build
    that writes waveforms."""
    text = inline_arithmetic(gate_rom_reads(event_gated(text)))
    if not waveform:
        text = purge_dead(text)
    text = explicit_sensitivity(process_locals(text))
    if not waveform:
        text = fuse_next_state(text)
    return merge_module_clocked(wait_for_enable(guard_lanes(text)))
