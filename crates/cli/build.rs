//! Scripts written for sysbench call C functions of the sysbench binary through LuaJIT's ffi
//! (`ffi.C.sb_counter_inc`): the binary exports bakeoff's versions of them to its dynamic
//! symbol table, where ffi.C looks.
fn main() {
    for symbol in ["sb_counter_inc"] {
        println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol={symbol}");
    }
}
