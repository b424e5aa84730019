//! sysctl.d files (`KEY = VALUE` lines, `#`/`;` comments): checked before they are sent to the host, so
//! that a bad `--sysctl-file` is refused with nothing changed.

/// The settings of a sysctl.d text, in order, whitespace in values normalised to one space (as tune.sh
/// and /proc/sys print them). An error names the line and what is wrong with it.
pub fn parse(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() || line.starts_with(';') {
            continue;
        }
        let n = i + 1;
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| format!("line {n} ({line:?}) is not KEY = VALUE"))?;
        let (k, v) = (k.trim(), v.split_whitespace().collect::<Vec<_>>().join(" "));
        let key_ok = !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c));
        if !key_ok {
            return Err(format!("line {n}: {k:?} is not a sysctl key"));
        }
        let value_ok = !v.is_empty()
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || " ._-:,".contains(c));
        if !value_ok {
            return Err(format!("line {n}: {v:?} is not a plain sysctl value"));
        }
        out.push((k.to_string(), v));
    }
    if out.is_empty() {
        return Err("it holds no KEY = VALUE line".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn reads_keys_and_normalised_values() {
        let s = parse("# c\n\nnet.core.somaxconn = 65535\n; old style\nnet.ipv4.ip_local_port_range =1024\t 65535 # wide\n")
            .unwrap();
        assert_eq!(
            s,
            vec![
                ("net.core.somaxconn".into(), "65535".into()),
                ("net.ipv4.ip_local_port_range".into(), "1024 65535".into())
            ]
        );
    }

    #[test]
    fn refuses_what_is_not_a_setting() {
        assert!(parse("net.core.somaxconn 65535\n")
            .unwrap_err()
            .contains("line 1"));
        assert!(parse("a = $(reboot)\n").is_err());
        assert!(parse("a b = 1\n").is_err());
        assert!(parse("a =\n").is_err());
        assert!(parse("# only comments\n").is_err());
    }
}
