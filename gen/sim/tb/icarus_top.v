// Icarus Verilog driver of the GA2 testbench (gen/sim/tb/ga2_tb.v): a free-running clock,
// period 10 ns, and nothing else; the testbench does everything at the rising edges.
// Compiled first, so its timescale also applies to the exported chip (which has none).
`timescale 1ns/1ns

module ga2_tb_icarus;
    reg clk = 1'b0;
    wire vcd_on;            // Icarus switches the dump itself ($dumpon/$dumpoff in the testbench)
    always #5 clk = ~clk;
    ga2_tb tb (.clk(clk), .vcd_on(vcd_on));
endmodule
