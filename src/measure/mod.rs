//! TEMPORARY stub until the measurement module lands.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Method {
    Icmp,
    TcpConnect { port: u16 },
}
#[derive(Debug, Clone, serde::Serialize)]
pub struct RttStats {
    pub method: Method,
    pub samples_ms: Vec<f64>,
    pub sent: u32,
    pub received: u32,
    pub loss_pct: f64,
    pub min_ms: f64,
    pub avg_ms: f64,
    pub max_ms: f64,
    pub mdev_ms: f64,
}
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct LinkFacts {
    pub interface: Option<String>,
    pub speed_bps: Option<u64>,
    pub duplex: Option<String>,
    pub mtu: Option<u32>,
    pub route_mtu: Option<u32>,
    pub source: Option<std::net::IpAddr>,
    pub gateway: Option<std::net::IpAddr>,
    pub notes: Vec<String>,
}
#[derive(Debug, Clone, serde::Serialize)]
pub struct HostMeasurement {
    pub host: String,
    pub addr: std::net::IpAddr,
    pub rtt: RttStats,
    pub link: LinkFacts,
    pub notes: Vec<String>,
}
#[derive(Debug, Clone, Default)]
pub struct ProbeOptions {
    pub probes: u32,
    pub progress: bool,
}
pub trait PathProber {
    fn measure(&self, hosts: &[String], opts: &ProbeOptions) -> Result<Vec<HostMeasurement>, crate::error::Error>;
}
pub struct SystemProber;
impl PathProber for SystemProber {
    fn measure(&self, _: &[String], _: &ProbeOptions) -> Result<Vec<HostMeasurement>, crate::error::Error> {
        Err(crate::error::Error::measurement("not yet"))
    }
}
