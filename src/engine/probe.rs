//! Deploy's own readiness probe: one GET on a container's own address on the stack network, reached
//! the way status reaches instances (`Target::reach`: directly on the bridge locally, through the SSH
//! connection remotely), judged by `core::readiness`.

use crate::core::readiness::{judge, Expect, Probe};
use crate::sut::Target;
use std::time::Duration;

/// A probe that takes longer than this is a "not yet": the next one follows at the probe interval.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// The time between two probes of one service.
pub const INTERVAL: Duration = Duration::from_millis(100);

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
    /// Ok when the container at `ip` gives the answer `probe` waits for; else why not, for the report
    /// of a wait that times out.
    pub async fn once(&self, target: &Target, ip: &str, probe: &Probe) -> Result<(), String> {
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
