//! The engine's own process on its host: which dockerd serves the socket, and how it was configured
//! (its flags and its daemon.json) — what `docker info` does not say, such as whether published ports
//! go through docker-proxy (the userland proxy) and the containers' default ulimits.

use super::Script;
use crate::doctor::facts::EngineConfig;

/// Sets `pid` to the engine's process: the dockerd whose command line names the socket ($1), else the
/// one of /var/run/docker.pid, else the only one.
pub const FIND_DOCKERD: &str = r#"pid=""
for d in /proc/[0-9]*; do
  [ "$(cat "$d/comm" 2>/dev/null)" = dockerd ] || continue
  if tr '\0' ' ' < "$d/cmdline" 2>/dev/null | grep -q -- "$1"; then pid=${d#/proc/}; fi
  [ -n "$any" ] || any=${d#/proc/}
done
[ -n "$pid" ] || pid=$(cat /var/run/docker.pid 2>/dev/null || echo "$any")
"#;

const CMDLINE: &str = "@@exectl-cmdline";
const CONFIG: &str = "@@exectl-config ";

/// Its command line (an argument a line), then its configuration file (--config-file, else
/// /etc/docker/daemon.json) and that file's text.
const CONFIG_BODY: &str = r#"[ -n "$pid" ] || exit 0
args=$(tr '\0' '\n' < /proc/$pid/cmdline)
echo @@exectl-cmdline; printf '%s\n' "$args"
cf=/etc/docker/daemon.json; prev=
while IFS= read -r a; do
  [ "$prev" = --config-file ] && cf=$a
  case "$a" in --config-file=*) cf=${a#--config-file=};; esac
  prev=$a
done <<ARGS
$args
ARGS
echo "@@exectl-config $cf"; cat "$cf" 2>/dev/null
true
"#;

/// The engine's flags and configuration file ($1 = its socket, to pick it among several dockerd).
pub fn engine_config(socket: &str) -> Script {
    Script::new(format!("{FIND_DOCKERD}{CONFIG_BODY}")).arg(socket)
}

/// What the engine was started with (None: no dockerd found). The userland proxy is on unless a flag
/// (`--userland-proxy=false`) or daemon.json (`"userland-proxy": false`) turns it off; dockerd refuses
/// to start when both set it, so the flag is read first.
pub fn parse_engine_config(out: &str) -> Option<EngineConfig> {
    let (_, rest) = out.split_once(CMDLINE)?;
    let (cmdline, config) = rest.split_once(CONFIG).unwrap_or((rest, ""));
    let (file, text) = config.split_once('\n').unwrap_or((config, ""));
    let args: Vec<&str> = cmdline.lines().filter(|l| !l.is_empty()).collect();
    let json: Option<serde_json::Value> = serde_json::from_str(text).ok();
    let flag_bool = |name: &str| {
        args.iter().find_map(|a| {
            if *a == name {
                return Some(true);
            }
            let v = a.strip_prefix(name)?.strip_prefix('=')?;
            Some(!matches!(v, "false" | "0" | "f" | "F" | "FALSE" | "False"))
        })
    };
    let from_file = json
        .as_ref()
        .and_then(|j| j.get("userland-proxy")?.as_bool());
    let (userland_proxy, proxy_set_by) = match (flag_bool("--userland-proxy"), from_file) {
        (Some(v), _) => (v, format!("dockerd's --userland-proxy={v}")),
        (None, Some(v)) => (v, format!("\"userland-proxy\": {v} in {}", file.trim())),
        (None, None) => (true, "the default".to_string()),
    };
    // `--default-ulimit nofile=S:H` (or `=nofile=S:H`), else daemon.json's default-ulimits.nofile.
    let nofile_flag = args.iter().enumerate().find_map(|(i, a)| {
        let v = match a.strip_prefix("--default-ulimit") {
            Some("") => args.get(i + 1).copied()?,
            Some(v) => v.strip_prefix('=')?,
            None => return None,
        };
        let (_, hard) = v.strip_prefix("nofile=")?.split_once(':')?;
        hard.parse().ok()
    });
    let nofile_file = json.as_ref().and_then(|j| {
        let n = j.pointer("/default-ulimits/nofile")?;
        n.get("Hard").or(n.get("Soft"))?.as_u64()
    });
    Some(EngineConfig {
        userland_proxy,
        proxy_set_by,
        default_nofile: nofile_flag.or(nofile_file),
        config_file: file.trim().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(cmdline: &[&str], file: &str, text: &str) -> String {
        format!("{CMDLINE}\n{}\n{CONFIG}{file}\n{text}", cmdline.join("\n"))
    }

    #[test]
    fn the_userland_proxy_is_on_unless_a_flag_or_the_file_turns_it_off() {
        let default =
            parse_engine_config(&out(&["dockerd"], "/etc/docker/daemon.json", "")).unwrap();
        assert!(default.userland_proxy);
        assert_eq!(default.proxy_set_by, "the default");
        assert_eq!(default.default_nofile, None);
        let flag = parse_engine_config(&out(
            &["dockerd", "--userland-proxy=false"],
            "/etc/docker/daemon.json",
            "",
        ))
        .unwrap();
        assert!(!flag.userland_proxy);
        assert_eq!(flag.proxy_set_by, "dockerd's --userland-proxy=false");
        let file = parse_engine_config(&out(
            &["dockerd", "--config-file", "/tmp/d.json"],
            "/tmp/d.json",
            r#"{"userland-proxy": false, "default-ulimits": {"nofile": {"Name": "nofile", "Soft": 1048576, "Hard": 1048576}}}"#,
        ))
        .unwrap();
        assert!(!file.userland_proxy);
        assert_eq!(
            file.proxy_set_by,
            "\"userland-proxy\": false in /tmp/d.json"
        );
        assert_eq!(file.default_nofile, Some(1048576));
        assert_eq!(file.config_file, "/tmp/d.json");
        let ulimit = parse_engine_config(&out(
            &["dockerd", "--default-ulimit", "nofile=1024:4096"],
            "/etc/docker/daemon.json",
            "{}",
        ))
        .unwrap();
        assert_eq!(ulimit.default_nofile, Some(4096));
        assert_eq!(parse_engine_config(""), None, "no dockerd found");
    }
}
