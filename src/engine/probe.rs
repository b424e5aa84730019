//! Deploy's own readiness probe: one GET on a container's own address on the stack network, reached
//! the way status reaches instances (`Target::reach`: directly on the bridge locally, through the SSH
//! connection remotely), judged by `core::readiness`; or the container's own healthcheck command
//! through the engine's exec.

use crate::sut::Target;
use exectl_core::readiness::{judge, Expect, HttpProbe, Probe};
use std::time::Duration;

/// A probe that takes longer than this is a "not yet": the next one follows at the probe interval.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// The time between two probes of one service: an HTTP GET is cheap; an exec costs the engine a
/// process start.
pub fn interval(probe: &Probe) -> Duration {
    match probe {
        Probe::Http(_) => Duration::from_millis(100),
        Probe::Exec(_) => Duration::from_millis(250),
    }
}

/// The one app client the probes of a deploy share.
pub struct Prober {
    client: crate::app::Client,
}

impl Default for Prober {
    fn default() -> Prober {
        Prober {
            client: crate::app::Client::new(2, crate::app::Timeouts::all(PROBE_TIMEOUT)),
        }
    }
}

impl Prober {
    /// Ok when `container` (as just inspected) gives the answer `probe` waits for; else why not, for
    /// the report of a wait that times out.
    pub async fn once(
        &self,
        target: &Target,
        container: &str,
        info: &bollard::models::ContainerInspectResponse,
        probe: &Probe,
    ) -> Result<(), String> {
        match probe {
            Probe::Http(http) => match super::observe::address_of(info) {
                Some(ip) => self.http(target, &ip, http).await,
                None => Err("no address on the stack network yet".into()),
            },
            Probe::Exec(argv) => exec(target, container, argv).await,
        }
    }

    async fn http(&self, target: &Target, ip: &str, probe: &HttpProbe) -> Result<(), String> {
        let addr = target
            .reach(ip, probe.port)
            .await
            .map_err(|e| format!("{e:#}"))?;
        let ep = crate::app::Endpoint::at(addr, probe.host.clone());
        let call = match probe.expect {
            Expect::AppOk => self.client.healthcheck(&ep),
            Expect::LbHealthy => self.client.lb_health(&ep),
        };
        let answer = call.answer().await.map_err(|e| format!("{e:#}"))?;
        let body = match &answer.body {
            serde_json::Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        judge(probe.expect, answer.status.as_u16(), &body)
    }
}

/// The healthcheck command in the container: exit 0 is ready (as for Docker), bounded like an HTTP probe.
async fn exec(target: &Target, container: &str, argv: &[String]) -> Result<(), String> {
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let run = crate::sut::exec(&target.docker, container, &argv, None);
    match tokio::time::timeout(2 * PROBE_TIMEOUT, run).await {
        Err(_) => Err(format!("no exit within {:?}", 2 * PROBE_TIMEOUT)),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Ok(Ok(out)) if out.exit_code == 0 => Ok(()),
        Ok(Ok(out)) => {
            let said: String = format!("{}{}", out.stdout, out.stderr)
                .trim()
                .chars()
                .take(120)
                .collect();
            Err(format!("exit {} {said:?}", out.exit_code))
        }
    }
}
