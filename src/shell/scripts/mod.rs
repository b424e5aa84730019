//! The host scripts the engine module reads from here (`limits`, `lock`, `ports`) and bench's sampler
//! (`sample`, which uses `limits`), as builders (an `exectl_core::scripts::Script`: body and arguments)
//! with the parser of each output beside it. Pure but for tests that run them with this machine's shell;
//! the others are in `exectl_core::scripts`.

pub mod limits;
pub mod lock;
pub mod ports;
pub mod sample;

/// The core's script builders, run by this machine's shell.
#[cfg(test)]
mod tests {
    use crate::shell::{HostShell, Local};
    use exectl_core::scripts::dockerd::{engine_config, parse_engine_config};
    use exectl_core::scripts::files::{upload, upload_temp};

    /// The script finds this host's dockerd (CI runs one) and names its configuration file.
    #[test]
    fn the_script_names_the_engines_arguments_and_file() {
        let s = engine_config("/var/run/docker.sock");
        assert_eq!(s.args, ["/var/run/docker.sock"]);
        let out = crate::shell::stdout_of(&Local, &s).unwrap();
        if out.is_empty() {
            return; // no dockerd on this machine
        }
        let c = parse_engine_config(&out).unwrap();
        assert!(!c.config_file.is_empty(), "{out}");
    }

    /// The script itself, run here with sh: modes exact, the temp file gone, a leftover replaced.
    #[test]
    fn the_upload_script_writes_beside_and_renames() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("a/b/.env");
        let tmp = upload_temp(&path);
        std::fs::create_dir_all(tmp.parent().unwrap()).unwrap();
        std::fs::write(&tmp, "leftover").unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).unwrap();
        for (mode, text) in [(0o600, "SECRET=1\n"), (0o755, "#!/bin/sh\n")] {
            let out = Local
                .run(&upload(&path, mode), Some(text.as_bytes()))
                .unwrap();
            assert_eq!(out.code, 0, "{}", out.stderr);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
            let m = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(m, mode);
            assert!(!tmp.exists());
        }
    }
}
