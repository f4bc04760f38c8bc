fn main() -> std::process::ExitCode {
    switchboard::main()
}
