// Verilator driver of the GA2 testbench (gen/sim/tb/ga2_tb.v): toggles the clock in a C++
// loop, which measured about 3x faster than a SystemVerilog clock under --timing.
// Time advances 5 ns per half period, as in gen/sim/tb/icarus_top.v, so both simulators
// write waveforms on the same time axis.  The exit status is 1 when the testbench ended
// with $fatal (mismatch, timeout or bad bundle) and 0 after $finish.
#include <memory>

#include "Vga2_tb.h"
#include "verilated.h"

int main(int argc, char** argv) {
    const std::unique_ptr<VerilatedContext> context{new VerilatedContext};
    context->commandArgs(argc, argv);
    context->fatalOnError(false);   // let $fatal end the loop; we turn it into the exit status
#if VM_TRACE
    context->traceEverOn(true);     // the testbench opens the VCD with $dumpfile/$dumpvars
#endif
    const std::unique_ptr<Vga2_tb> top{new Vga2_tb{context.get()}};
    top->clk = 0;
    top->eval();
    while (!context->gotFinish()) {
        for (int level = 1; level >= 0 && !context->gotFinish(); --level) {
            context->timeInc(5);
            top->clk = level;
#if VM_TRACE
            // eval() = eval_step() + eval_end_step(); the latter writes the trace, so it
            // runs only while the testbench is inside the chosen program.
            top->eval_step();
            if (top->vcd_on) top->eval_end_step();
#else
            top->eval();
#endif
        }
    }
    top->final();
    return context->gotError() ? 1 : 0;
}
