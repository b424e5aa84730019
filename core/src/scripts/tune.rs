//! `exectl host tune|restore` on the host: run the uploaded ansible-free/tune.sh, forget its state.

use super::Script;

/// Run tune.sh from the folder `dir` with `args` (its report on stdout: `host::report::parse_lines`).
pub fn run_tune(dir: &str, args: &[String]) -> Script {
    Script::new(r#"d=$1; shift; exec bash "$d/tune.sh" "$@""#)
        .arg(dir)
        .args(args.iter().cloned())
}

/// After a restore nothing is recorded any more: the copy `host tune` kept goes, and the state folder if
/// it is then empty.
pub fn forget_state(state_dir: &str) -> Script {
    Script::new(r#"rm -rf -- "$1/ansible-free"; rmdir -- "$1" 2>/dev/null; true"#).arg(state_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_are_exact() {
        let s = run_tune("/tmp/d", &["--root".into(), "/".into(), "--check".into()]);
        assert_eq!(
            s.command_line(),
            r#"sh -c 'd=$1; shift; exec bash "$d/tune.sh" "$@"' sh '/tmp/d' '--root' '/' '--check'"#
        );
        assert_eq!(
            forget_state("/var/lib/exectl/host").args,
            ["/var/lib/exectl/host"]
        );
    }
}
