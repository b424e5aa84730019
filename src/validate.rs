//! Checks of a rendered bundle: the pure ones (re-parse into typed models, cross-references, lock hashes)
//! and the ones that run real tools (nginx -t, docker-compose config -q).

use exectl_core::render::{self, Bundle};
use std::path::Path;
use std::process::Command;

pub use exectl_core::checks::{at, pure_checks, Check, Outcome};

/// Run `nginx -t` on the rendered nginx.conf. Upstream names are made resolvable for nginx alone by
/// bind-mounting a hosts file in a private mount namespace, so the file tested is the file deployed; where
/// that is not allowed, a copy with the names replaced by 127.0.0.1 is tested (same lines).
pub fn nginx_check(bundle: &Bundle, upstream_names: &[String]) -> Option<Check> {
    let f = bundle.get(render::NGINX)?;
    let what = "nginx -t";
    let Some(nginx) = find_tool("nginx") else {
        return Some(Check::new(
            f.path,
            what,
            Outcome::Fail,
            "nginx not found on PATH or in /usr/sbin; fix: install nginx (Debian: apt-get install nginx-light)",
        ));
    };
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => return Some(Check::new(f.path, what, Outcome::Fail, e.to_string())),
    };
    let conf = dir.path().join("nginx.conf");
    let hosts = dir.path().join("hosts");
    let system_hosts = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    let extra = format!("127.0.0.1 {}\n", upstream_names.join(" "));
    if let Err(e) = std::fs::write(&conf, &f.bytes)
        .and_then(|_| std::fs::write(&hosts, format!("{system_hosts}\n{extra}")))
    {
        return Some(Check::new(f.path, what, Outcome::Fail, e.to_string()));
    }
    let prefix = format!("{}/", dir.path().display());
    let pid = format!("pid {}/nginx.pid;", dir.path().display());
    let script = "mount --bind \"$1\" /etc/hosts || exit 97; shift; exec \"$@\"";
    let run = Command::new("unshare")
        .args(["--mount", "sh", "-c", script, "sh"])
        .arg(&hosts)
        .arg(&nginx)
        .args(["-t", "-q", "-e", "stderr", "-p", &prefix, "-c"])
        .arg(&conf)
        .args(["-g", &pid])
        .output();
    let output = match run {
        Ok(o) if o.status.code() != Some(97) => o,
        _ => {
            // No private mount namespace here: test a copy whose upstream names point at loopback.
            let mut text = f.text().to_string();
            for n in upstream_names {
                text = text.replace(&format!("server {n}:"), "server 127.0.0.1:");
            }
            if let Err(e) = std::fs::write(&conf, text) {
                return Some(Check::new(f.path, what, Outcome::Fail, e.to_string()));
            }
            match Command::new(&nginx)
                .args(["-t", "-q", "-e", "stderr", "-p", &prefix, "-c"])
                .arg(&conf)
                .args(["-g", &pid])
                .output()
            {
                Ok(o) => o,
                Err(e) => return Some(Check::new(f.path, what, Outcome::Fail, e.to_string())),
            }
        }
    };
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let conf_str = conf.display().to_string();
    if output.status.success() {
        return Some(Check::new(f.path, what, Outcome::Pass, "syntax ok"));
    }
    // Name the bundle file and line, not the temporary copy.
    let line = stderr
        .split(&format!("{conf_str}:"))
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse::<usize>().ok());
    let detail = stderr
        .lines()
        .filter(|l| !l.contains("test failed"))
        // Drop nginx's "2026/01/01 00:00:00 [emerg] 12#12: " prefix: keep the level and the message.
        .map(|l| match (l.find('['), l.find("#")) {
            (Some(b), Some(h)) if b < h => {
                let level = &l[b..l[b..].find(']').map_or(b, |e| b + e + 1)];
                let msg = l[h..].split_once(": ").map_or(l, |(_, m)| m);
                format!("{level} {}", msg.replace(&conf_str, f.path))
            }
            _ => l.replace(&conf_str, f.path),
        })
        .collect::<Vec<_>>()
        .join("; ");
    Some(Check::new(&at(f.path, line), what, Outcome::Fail, detail))
}

/// `docker-compose config -q` when that tool is installed (it is optional).
pub fn compose_cli_check(dir: &Path) -> Check {
    let what = "docker-compose config -q";
    let Some(tool) = find_tool("docker-compose") else {
        return Check::new(
            render::COMPOSE,
            what,
            Outcome::Skip,
            "docker-compose not installed",
        );
    };
    match Command::new(tool)
        .current_dir(dir)
        .args(["-f", render::COMPOSE, "config", "-q"])
        .output()
    {
        Ok(o) if o.status.success() => Check::new(render::COMPOSE, what, Outcome::Pass, "accepted"),
        Ok(o) => Check::new(
            render::COMPOSE,
            what,
            Outcome::Fail,
            String::from_utf8_lossy(&o.stderr)
                .trim()
                .replace('\n', "; "),
        ),
        Err(e) => Check::new(render::COMPOSE, what, Outcome::Fail, e.to_string()),
    }
}

fn find_tool(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
