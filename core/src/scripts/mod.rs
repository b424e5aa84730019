//! Every shell script exectl runs on a target's host, as a builder (a `Script`: body and arguments)
//! with the parser of its output beside it. Pure: tests check the exact scripts and read recorded
//! outputs; running them is the shell's `HostShell` (which also runs these in its own tests).

pub mod dockerd;
pub mod facts;
pub mod files;
pub mod sockets;
pub mod tune;

/// A shell script and its arguments ($1, $2, ...): what a host shell runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    pub body: String,
    pub args: Vec<String>,
}

impl Script {
    pub fn new(body: impl Into<String>) -> Script {
        Script {
            body: body.into(),
            args: Vec::new(),
        }
    }

    pub fn arg(mut self, a: impl Into<String>) -> Script {
        self.args.push(a.into());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Script {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// The one command line for a remote shell: `sh -c 'BODY' sh 'ARG1' ...` ($0 is `sh`).
    pub fn command_line(&self) -> String {
        let mut cmd = format!("sh -c {} sh", quote(&self.body));
        for a in &self.args {
            cmd.push(' ');
            cmd.push_str(&quote(a));
        }
        cmd
    }
}

/// `'…'` with embedded quotes closed and escaped: one word for a POSIX shell.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_quotes_body_and_every_argument() {
        let s = Script::new(r#"rm -f -- "$1""#).arg("/opt/it's here");
        assert_eq!(
            s.command_line(),
            r#"sh -c 'rm -f -- "$1"' sh '/opt/it'\''s here'"#
        );
        assert_eq!(Script::new("true").command_line(), "sh -c 'true' sh");
        assert_eq!(quote(""), "''");
    }
}
