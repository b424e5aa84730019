//! Run a command inside a container through the engine's exec API, optionally feeding it stdin.

use anyhow::{Context, Result};
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::Docker;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

#[derive(Debug, Clone)]
pub struct ExecOutput {
    pub exit_code: i64,
    pub stdout: String,
    pub stderr: String,
}

pub async fn exec(
    docker: &Docker,
    container: &str,
    cmd: &[&str],
    stdin: Option<&[u8]>,
) -> Result<ExecOutput> {
    let created = docker
        .create_exec(
            container,
            CreateExecOptions {
                cmd: Some(cmd.iter().map(|s| s.to_string()).collect()),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                attach_stdin: Some(stdin.is_some()),
                ..Default::default()
            },
        )
        .await
        .with_context(|| format!("exec {cmd:?} in {container}"))?;
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    if let StartExecResults::Attached {
        mut output,
        mut input,
    } = docker.start_exec(&created.id, None).await?
    {
        let writer = async {
            if let Some(bytes) = stdin {
                input.write_all(bytes).await?;
            }
            input.shutdown().await
        };
        let reader = async {
            while let Some(chunk) = output.next().await {
                match chunk? {
                    bollard::container::LogOutput::StdOut { message } => {
                        stdout.extend_from_slice(&message)
                    }
                    bollard::container::LogOutput::StdErr { message } => {
                        stderr.extend_from_slice(&message)
                    }
                    _ => {}
                }
            }
            Ok::<_, anyhow::Error>(())
        };
        let (w, r) = tokio::join!(writer, reader);
        r?;
        w.with_context(|| format!("writing stdin to {cmd:?} in {container}"))?;
    }
    let inspect = docker.inspect_exec(&created.id).await?;
    Ok(ExecOutput {
        exit_code: inspect.exit_code.unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    })
}
