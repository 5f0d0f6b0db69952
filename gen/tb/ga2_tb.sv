// GA2 bundle testbench: replays every program of a bundle file on the exported chip
// (module ga2_chip) and compares status, status_pc, the five counters and the final
// external memory with the golden model's expectations stored in the bundle.
//
// One source for every simulator.  The module is clocked from outside (input clk): Icarus
// runs it under gen/tb/icarus_top.sv (a clock generator), Verilator under gen/tb/harness.cpp
// (a C++ loop), so neither simulator needs timing controls here.  All inputs of the chip are
// registers updated by non-blocking assignments at the rising edge, i.e. "shortly after the
// edge", which is the cycle semantics of Amaranth's `await ctx.tick()`.
//
// The sizes and constants come from ga2_tb_params.svh, which gen/sim_verilog.py generates
// from ga2_hdl/isa.py and ga2_hdl/bundle.py for every build (nothing is restated here).
//
// Plusargs (run time; nothing about a bundle is compiled in):
//   +bundle=PATH        the bundle file (format v1, docs/bundle.md)          (required)
//   +bundle_words=N     number of words in it (the runner counts them)      (required)
//   +ext_out=PATH       write final external memories there (non-zero words): every program
//                       with +ext_all, otherwise only the first mismatching one
//   +vcd=PATH           dump a waveform of one program (+vcd_program=N, default 0)
//   +timeout=N          cycles to wait for `halted` (default: 2 x expected total + slack)
//
// Output, one line each:
//   RESULT i status status_pc total matrix dma vector instructions   (every program run)
//   PASS: ... / MISMATCH: ... / FAIL: ...                                (the verdict, exactly
//        as gen/simulator.py BundleReport.line() words it)
//   TIMEOUT: ... / ERROR: ...                                            (why a FAIL happened)
// A mismatch, a timeout or a bad bundle ends with $fatal (non-zero exit status).

module ga2_tb (
    input  wire clk,
    output reg  vcd_on      // high while the chosen program is dumped (the Verilator driver gates tracing on it)
);
`include "ga2_tb_params.svh"

    // ---------------------------------------------------------------- the chip
    reg                       rst = 1'b1;
    reg                       start = 1'b0;
    reg                       imem_we = 1'b0;
    reg  [IMEM_ADDR_BITS-1:0] imem_addr = '0;
    reg  [127:0]              imem_wdata = '0;
    wire                      running, halted;
    wire [3:0]                status;
    wire [15:0]               status_pc;
    wire [31:0]               cnt_total, cnt_matrix, cnt_dma, cnt_vector, cnt_instructions;
    wire [15:0]               ext_addr;
    wire                      ext_re, ext_we;
    wire [31:0]               ext_wdata;
    reg  [31:0]               ext_rdata = '0;      // the last stage of the read pipeline
    reg                       ext_rvalid = 1'b0;

    ga2_chip dut (
        .clk(clk), .rst(rst),
        .start(start), .running(running), .halted(halted),
        .status(status), .status_pc(status_pc),
        .cnt_total(cnt_total), .cnt_matrix(cnt_matrix), .cnt_dma(cnt_dma),
        .cnt_vector(cnt_vector), .cnt_instructions(cnt_instructions),
        .imem_we(imem_we), .imem_addr(imem_addr), .imem_wdata(imem_wdata),
        .ext_addr(ext_addr), .ext_re(ext_re), .ext_we(ext_we), .ext_wdata(ext_wdata),
        .ext_rdata(ext_rdata), .ext_rvalid(ext_rvalid)
    );

    // verilator tracing_off
    // ---------------------------------------------------------------- state
    reg [31:0] words [0:BUNDLE_CAP-1];     // the whole bundle, as $readmemh reads it
    reg [31:0] mem [0:EXT_WORDS-1];        // the external memory
    // The read pipeline has LAT stages of (valid, data): stages 0 .. LAT-2 here, the last one is
    // (ext_rvalid, ext_rdata) itself.  (Icarus 11 did not propagate a continuous assignment
    // from an element of these arrays, so the last stage is a plain register.)
    reg        pipe_valid [0:LAT-2];
    reg [31:0] pipe_data  [0:LAT-2];

    localparam int S_RESET = 0, S_NEXT = 1, S_IMEM = 2, S_EXT = 3, S_STARTED = 4, S_WAIT = 5, S_DONE = 6;
    int     state = S_RESET;
    int     reset_edges = 0;
    int     n_words, n_programs;
    int     prog = 0;              // index of the program being run
    int     pos = 4;               // next bundle word to read
    int     n_code, imem_i;
    int     exp_status, exp_pc;
    int     exp_final;             // bundle index of the expected final memory (its run count)
    int     next_record;           // bundle index just after this program's record
    longint exp_counter [0:4];
    longint limit, waited;
    longint total_cycles = 0;
    int     timeout_arg = 0;
    int     vcd_program = 0;
    string  bundle_path, ext_out_path = "", vcd_path = "";
    int     ext_fd = 0;
    bit     ext_all = 0;
    // scratch for the loops
    int     i, k, a, r, n_runs, run_start, run_len, run_data, run_end, expw;
    bit     found;
    longint got [0:4];
    // verilator tracing_on

    // ---------------------------------------------------------------- helpers
    function automatic void die(input string why);
        $display("ERROR: %s", why);
        $display("FAIL: %0d of %0d programs ran", prog, n_programs);
        $fatal(1, "the GA2 testbench stopped: %s", why);
    endfunction

    function automatic int word_at(input int index, input string what);
        if (index >= n_words) begin
            die($sformatf("bundle ends early at word %0d: expected %s", index, what));
            return 0;
        end
        return words[index];
    endfunction

    // Checks the runs starting at bundle index p (a count, then start, length, words ...),
    // returns the index just after them.
    function automatic int skip_runs(input int p, input string what);
        int n, s, l, last_end;
        n = word_at(p, {"the run count of the ", what});
        p = p + 1;
        last_end = 0;
        for (int j = 0; j < n; j++) begin
            s = word_at(p, {"a run start of the ", what});
            l = word_at(p + 1, {"a run length of the ", what});
            if (s < last_end || l == 0 || s + l > EXT_WORDS)
                die($sformatf("%s of program %0d: run %0d (start %0d, length %0d) is out of order, empty or outside the %0d-word memory",
                              what, prog, j, s, l, EXT_WORDS));
            last_end = s + l;
            p = p + 2 + l;
            if (p > n_words) die($sformatf("bundle ends inside run %0d of the %s of program %0d", j, what, prog));
        end
        return p;
    endfunction

    function automatic string counter_line(input int p);
        return $sformatf("RESULT %0d %0d %0d %0d %0d %0d %0d %0d", p, status, status_pc,
                         cnt_total, cnt_matrix, cnt_dma, cnt_vector, cnt_instructions);
    endfunction

    function automatic void dump_ext(input int p);
        if (ext_fd != 0) begin
            $fwrite(ext_fd, "program %0d\n", p);
            for (int j = 0; j < EXT_WORDS; j++)
                if (mem[j] != 32'd0) $fwrite(ext_fd, "%0d %08x\n", j, mem[j]);
        end
    endfunction

    // ---------------------------------------------------------------- start-up
    initial begin
        vcd_on = 1'b0;
        for (int j = 0; j < LAT - 1; j++) begin pipe_valid[j] = 1'b0; pipe_data[j] = '0; end
        n_programs = 0;
        if (!$value$plusargs("bundle=%s", bundle_path)) die("no bundle: pass +bundle=PATH");
        if (!$value$plusargs("bundle_words=%d", n_words)) die("no word count: pass +bundle_words=N");
        if (n_words < 5 || n_words > BUNDLE_CAP)
            die($sformatf("+bundle_words=%0d: this build holds bundles of 5 .. %0d words", n_words, BUNDLE_CAP));
        $readmemh(bundle_path, words, 0, n_words - 1);
        if (words[0] !== MAGIC) die($sformatf("%s is not a GA2 bundle (first word %08x)", bundle_path, words[0]));
        if (words[1] !== VERSION) die($sformatf("bundle version %0d; this testbench reads version %0d", words[1], VERSION));
        n_programs = words[2];
        if (words[3] !== EXT_WORDS)
            die($sformatf("the bundle is for ext_words=%0d but this chip was built with %0d", words[3], EXT_WORDS));
        if ($value$plusargs("ext_out=%s", ext_out_path)) begin
            ext_fd = $fopen(ext_out_path, "w");
            if (ext_fd == 0) die({"cannot write ", ext_out_path});
        end
        ext_all = $test$plusargs("ext_all");
        if (!$value$plusargs("timeout=%d", timeout_arg)) timeout_arg = 0;
        if ($value$plusargs("vcd=%s", vcd_path)) begin
            if (!$value$plusargs("vcd_program=%d", vcd_program)) vcd_program = 0;
            if (vcd_program < 0 || vcd_program >= n_programs)
                die($sformatf("+vcd_program=%0d: the bundle has programs 0 .. %0d", vcd_program, n_programs - 1));
            $dumpfile(vcd_path);
        end
    end

    // ---------------------------------------------------------------- every rising edge
    always @(posedge clk) begin : step
        reg [31:0] read_word;
        // The external-memory model (chip_contract.md): the pipeline captures the word read
        // before this edge's write; the write lands at this edge.
        read_word = 32'd0;
        if (ext_re) begin
            if (ext_addr >= EXT_WORDS) die($sformatf("program %0d read ext[%0d], outside the %0d-word memory", prog, ext_addr, EXT_WORDS));
            read_word = mem[ext_addr];
        end
        if (ext_we) begin
            if (ext_addr >= EXT_WORDS) die($sformatf("program %0d wrote ext[%0d], outside the %0d-word memory", prog, ext_addr, EXT_WORDS));
            mem[ext_addr] = ext_wdata;
        end
        pipe_valid[0] <= ext_re;
        pipe_data[0]  <= read_word;
        for (int j = 1; j < LAT - 1; j++) begin
            pipe_valid[j] <= pipe_valid[j-1];
            pipe_data[j]  <= pipe_data[j-1];
        end
        ext_rvalid <= pipe_valid[LAT-2];
        ext_rdata  <= pipe_data[LAT-2];

        case (state)
        S_RESET: begin                       // rst is high for the first two edges
            reset_edges = reset_edges + 1;
            if (reset_edges == 2) begin rst <= 1'b0; state = S_NEXT; end
        end

        S_NEXT: begin                        // the next record, or the end of the bundle
            if (vcd_on) begin $dumpflush; $dumpoff; vcd_on <= 1'b0; end   // one edge after the halt
            if (prog == n_programs) begin
                if (word_at(pos, "the end marker") !== END_MARKER || pos + 1 != n_words)
                    die($sformatf("expected the end marker %08x as the last word (word %0d of %0d)", END_MARKER, pos, n_words));
                $display("PASS: %0d programs match the golden model (memory and all five cycle counters), %0d cycles in total",
                         n_programs, total_cycles);
                if (ext_fd != 0) $fclose(ext_fd);
                state = S_DONE;
                $finish;
            end else begin
                n_code = word_at(pos, "an instruction count");
                if (n_code < 1 || n_code > IMEM_WORDS)
                    die($sformatf("program %0d has %0d instructions; the instruction memory holds 1 .. %0d", prog, n_code, IMEM_WORDS));
                pos = pos + 1;
                if (pos + 4 * n_code > n_words) die($sformatf("bundle ends inside the code of program %0d", prog));
                imem_i = 0;
                state = S_IMEM;
            end
        end

        S_IMEM: begin                        // one instruction word per cycle through the write port
            imem_we    <= 1'b1;
            imem_addr  <= imem_i[IMEM_ADDR_BITS-1:0];
            imem_wdata <= {words[pos], words[pos+1], words[pos+2], words[pos+3]};
            pos = pos + 4;
            imem_i = imem_i + 1;
            if (imem_i == n_code) state = S_EXT;
        end

        S_EXT: begin                         // memory image and expectations, then start
            imem_we <= 1'b0;
            for (int j = 0; j < EXT_WORDS; j++) mem[j] = 32'd0;
            k = skip_runs(pos, "initial memory");
            n_runs = words[pos];
            a = pos + 1;
            for (r = 0; r < n_runs; r++) begin
                run_start = words[a];
                run_len = words[a + 1];
                for (int j = 0; j < run_len; j++) mem[run_start + j] = words[a + 2 + j];
                a = a + 2 + run_len;
            end
            pos = k;
            k = word_at(pos + 6, "the expected status, status_pc and five counters");
            exp_status = words[pos];
            exp_pc = words[pos + 1];
            for (int j = 0; j < 5; j++) exp_counter[j] = words[pos + 2 + j];   // zero-extended
            exp_final = pos + 7;
            next_record = skip_runs(exp_final, "expected final memory");
            limit = (timeout_arg > 0) ? timeout_arg : 2 * exp_counter[0] + TIMEOUT_SLACK;
            if (vcd_path != "" && prog == vcd_program) begin
                $dumpvars(0, dut);
                $dumpon;
                vcd_on <= 1'b1;
            end
            start <= 1'b1;
            state = S_STARTED;
        end

        S_STARTED: begin                     // the chip samples start at this edge
            start <= 1'b0;
            waited = 0;
            state = S_WAIT;
        end

        S_WAIT: begin
            if (halted === 1'b1) begin
                $display(counter_line(prog));
                total_cycles = total_cycles + cnt_total;
                got[0] = cnt_total; got[1] = cnt_matrix; got[2] = cnt_dma; got[3] = cnt_vector; got[4] = cnt_instructions;
                // the first difference, in the order of ga2_hdl/results.py first_mismatch
                if (status !== exp_status[3:0] || status_pc !== exp_pc[15:0] || exp_status > 15 || exp_pc > 16'hffff) begin
                    dump_ext(prog);
                    $display("MISMATCH: program %0d: status error: expected %s@%0d, got %s@%0d",
                             prog, error_name(exp_status), exp_pc, error_name(status), status_pc);
                    $fatal(1, "program %0d differs from the golden model", prog);
                end
                for (int j = 0; j < 5; j++)
                    if (got[j] !== exp_counter[j]) begin
                        dump_ext(prog);
                        $display("MISMATCH: program %0d: counter %s: expected %0d, got %0d",
                                 prog, counter_name(j), exp_counter[j], got[j]);
                        $fatal(1, "program %0d differs from the golden model", prog);
                    end
                // walk the memory and the expected runs together
                found = 1'b0;
                n_runs = words[exp_final];
                r = 0;
                k = exp_final + 1;                       // current run's header
                run_start = (n_runs > 0) ? words[k] : EXT_WORDS;
                run_len = (n_runs > 0) ? words[k + 1] : 0;
                for (a = 0; a < EXT_WORDS && !found; a++) begin
                    if (r < n_runs && a == run_start + run_len) begin
                        r = r + 1;
                        k = k + 2 + run_len;
                        run_start = (r < n_runs) ? words[k] : EXT_WORDS;
                        run_len = (r < n_runs) ? words[k + 1] : 0;
                    end
                    expw = (a >= run_start) ? words[k + 2 + a - run_start] : 0;
                    if (mem[a] !== expw) begin
                        found = 1'b1;
                        dump_ext(prog);
                        $display("MISMATCH: program %0d: ext[%0d]: expected 0x%08x, got 0x%08x", prog, a, expw, mem[a]);
                        $fatal(1, "program %0d differs from the golden model", prog);
                    end
                end
                if (ext_all) dump_ext(prog);
                pos = next_record;
                prog = prog + 1;
                state = S_NEXT;
            end else begin
                waited = waited + 1;
                if (waited > limit) begin
                    $display("TIMEOUT: program %0d did not halt within %0d cycles (expected %0d)", prog, limit, exp_counter[0]);
                    $display("FAIL: %0d of %0d programs ran", prog, n_programs);
                    $fatal(1, "program %0d did not halt", prog);
                end
            end
        end

        default: ;
        endcase
    end
endmodule
