/// mimalloc: the request path allocates many small, short-lived objects (JSON values,
/// records, events) across threads; glibc malloc spent ~15% of the CPU per task there.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    switchboard::main()
}
