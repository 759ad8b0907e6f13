//! TCP memory: what buffers × flows need against tcp_mem (counted in pages of this machine's
//! page size, [`crate::host::page_size`]), the RAM, and what TCP holds now.
//!
//! [`budget`] is the one computation of it, pure; [`tcp_memory`] words it as check's finding,
//! and `advise` can word the same budget as warnings.

use super::Finding;
use crate::text;

/// The facts the budget is computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFacts {
    /// net.ipv4.tcp_mem as read ("min pressure max", in pages); None where not visible (a
    /// child network namespace: it is host-wide).
    pub tcp_mem: Option<String>,
    /// Largest buffer one flow may take (the running maxima, or the path's needs with --host).
    pub per_flow: u64,
    pub flows: u32,
    /// Total RAM in bytes, when known.
    pub ram: Option<u64>,
    /// Pages TCP holds now (/proc/net/sockstat), when known.
    pub in_use_pages: Option<u64>,
    /// Bytes per page: 4096 on x86-64, often 16 KiB or 64 KiB on arm64 and ppc64.
    pub page_size: u64,
}

/// Buffers × flows against what the kernel and the RAM allow, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    /// per_flow × flows.
    pub need: u128,
    /// tcp_mem[1] (pressure) and tcp_mem[2] (max), in pages; None where tcp_mem is not visible.
    pub tcp_mem_pages: Option<(u64, u64)>,
    pub in_use_pages: Option<u64>,
    pub ram: Option<u64>,
    pub page_size: u64,
}

impl MemoryBudget {
    /// `pages` in bytes at this machine's page size.
    pub fn bytes(&self, pages: u64) -> u64 {
        pages.saturating_mul(self.page_size)
    }

    /// tcp_mem[2] in bytes: the most all TCP sockets together may hold.
    pub fn max_bytes(&self) -> Option<u64> {
        self.tcp_mem_pages.map(|(_, max)| self.bytes(max))
    }

    /// TCP holds at least tcp_mem[1] now: the kernel is shrinking every window.
    pub fn under_pressure(&self) -> bool {
        matches!((self.in_use_pages, self.tcp_mem_pages), (Some(used), Some((pressure, _))) if used >= pressure)
    }

    /// The flows need more than tcp_mem[2].
    pub fn exceeds_tcp_mem(&self) -> bool {
        self.max_bytes().is_some_and(|max| self.need > u128::from(max))
    }

    /// The flows need more than a quarter of the RAM.
    pub fn over_quarter_of_ram(&self) -> bool {
        self.ram
            .is_some_and(|ram| ram > 0 && self.need.saturating_mul(4) > u128::from(ram))
    }

    /// The tcp_mem[2] in pages that would hold the flows.
    pub fn pages_needed(&self) -> u128 {
        self.need.div_ceil(u128::from(self.page_size.max(1)))
    }
}

/// The budget; None when tcp_mem is there but not three numbers.
pub fn budget(m: &MemoryFacts) -> Option<MemoryBudget> {
    let tcp_mem_pages = match m.tcp_mem.as_deref() {
        None => None,
        Some(t) => {
            let pages: Vec<u64> = t.split(' ').filter_map(|p| p.parse().ok()).collect();
            let [_, pressure, max] = pages[..] else {
                return None;
            };
            Some((pressure, max))
        }
    };
    Some(MemoryBudget {
        need: u128::from(m.per_flow) * u128::from(m.flows),
        tcp_mem_pages,
        in_use_pages: m.in_use_pages,
        ram: m.ram,
        page_size: m.page_size,
    })
}

/// check's finding on TCP memory: pressure now, then tcp_mem[2], then the RAM.
pub fn tcp_memory(m: &MemoryFacts) -> Option<Finding> {
    let id = "tcp-memory";
    let b = budget(m)?;
    let need_u64 = u64::try_from(b.need).unwrap_or(u64::MAX);
    let Some((pressure, max)) = b.tcp_mem_pages else {
        // A child network namespace has no tcp_mem: it is host-wide. RAM is still worth a look.
        let ram = m.ram?;
        let msg = format!(
            "{} \u{d7} {} against {} of RAM (tcp_mem is host-wide, not visible here)",
            flows(m.flows),
            text::size(m.per_flow),
            text::size(ram)
        );
        return Some(if b.over_quarter_of_ram() {
            Finding::warn(
                id,
                format!("{msg}: more than a quarter of it"),
                "plan for fewer concurrent bulk flows, or add memory",
            )
        } else {
            Finding::ok(id, msg)
        });
    };
    if b.under_pressure() {
        return Some(Finding::fail(
            id,
            format!(
                "TCP uses {} now, past tcp_mem[1] ({}): the kernel is under TCP memory pressure and shrinks every window",
                text::size(b.bytes(m.in_use_pages.unwrap_or(0))),
                text::size(b.bytes(pressure))
            ),
            "raise net.ipv4.tcp_mem, or find the sockets holding memory (`ss -tm`)",
        ));
    }
    if b.exceeds_tcp_mem() {
        let pages_needed = b.pages_needed();
        let value = format!("{pressure} {} {pages_needed}", pages_needed.max(u128::from(pressure)));
        return Some(Finding::warn(
            id,
            format!(
                "{} \u{d7} {} = {}, more than tcp_mem[2] ({}): under load the kernel will shrink the windows",
                flows(m.flows),
                text::size(m.per_flow),
                text::size(need_u64),
                text::size(b.bytes(max))
            ),
            format!(
                "raise net.ipv4.tcp_mem[2] to at least {pages_needed} pages ({}), or expect fewer concurrent flows",
                crate::os::Os::Linux.set_command("net.ipv4.tcp_mem", &value)
            ),
        ));
    }
    if b.over_quarter_of_ram() {
        return Some(Finding::warn(
            id,
            format!(
                "{} \u{d7} {} is more than a quarter of the RAM ({})",
                flows(m.flows),
                text::size(m.per_flow),
                text::size(m.ram.unwrap_or(0))
            ),
            "plan for fewer concurrent bulk flows, or add memory",
        ));
    }
    let ram = m.ram.map(|r| format!(" of {} RAM", text::size(r))).unwrap_or_default();
    Some(Finding::ok(
        id,
        format!(
            "tcp_mem[2] = {}{ram} holds {} \u{d7} {}",
            text::size(b.bytes(max)),
            flows(m.flows),
            text::size(m.per_flow)
        ),
    ))
}

/// "1 flow", "2 flows", "100,000 flows".
fn flows(n: u32) -> String {
    super::counted(u64::from(n), "flow", "flows")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Status;

    fn base_like() -> MemoryFacts {
        MemoryFacts {
            tcp_mem: Some("188049 250735 376098".into()),
            per_flow: 6_291_456,
            flows: 1,
            ram: Some(8 << 30),
            in_use_pages: Some(10),
            page_size: 4096,
        }
    }

    #[test]
    fn memory() {
        let base = MemoryFacts {
            tcp_mem: Some("188049 250735 376098".into()),
            per_flow: 6_291_456,
            flows: 1,
            ram: Some(8 << 30),
            in_use_pages: Some(10),
            page_size: 4096,
        };
        assert_eq!(tcp_memory(&base).expect("f").status, Status::Ok);
        let many = MemoryFacts { flows: 300, ..base };
        let w = tcp_memory(&many).expect("f");
        assert_eq!(w.status, Status::Warn);
        assert!(w.message.contains("tcp_mem[2]"), "{}", w.message);
        assert!(
            w.message.starts_with("300 flows \u{d7} 6 MiB = 1.76 GiB, more than"),
            "{}",
            w.message
        );
        let pressure = MemoryFacts {
            in_use_pages: Some(260_000),
            flows: 1,
            ..many
        };
        assert_eq!(tcp_memory(&pressure).expect("f").status, Status::Fail);
        let small_ram = MemoryFacts {
            ram: Some(16 << 20),
            in_use_pages: None,
            ..pressure
        };
        assert_eq!(tcp_memory(&small_ram).expect("f").status, Status::Warn);
        assert_eq!(
            tcp_memory(&MemoryFacts {
                tcp_mem: Some("x".into()),
                ram: Some(16 << 20),
                in_use_pages: None,
                ..base_like()
            }),
            None
        );
        // A child namespace: no tcp_mem, RAM only.
        let ns = tcp_memory(&MemoryFacts {
            tcp_mem: None,
            ..base_like()
        })
        .expect("f");
        assert_eq!(ns.status, Status::Ok);
        assert!(ns.message.contains("host-wide"), "{}", ns.message);
        assert_eq!(
            tcp_memory(&MemoryFacts {
                tcp_mem: None,
                ram: None,
                ..base_like()
            }),
            None
        );
        assert_eq!(small_ram.flows, 1);
    }

    #[test]
    fn tcp_mem_counts_in_pages_of_the_real_size() {
        // tcp_mem[2] = 1024 pages: 4 MiB at 4 KiB pages, 64 MiB at 64 KiB pages (arm64, ppc64).
        let facts = |page_size| MemoryFacts {
            tcp_mem: Some("256 512 1024".into()),
            per_flow: 16 << 20,
            flows: 1,
            ram: Some(64 << 30),
            in_use_pages: Some(10),
            page_size,
        };
        let small = tcp_memory(&facts(4096)).expect("f");
        assert_eq!(small.status, Status::Warn, "{small:?}");
        assert!(
            small
                .message
                .contains("1 flow \u{d7} 16 MiB = 16 MiB, more than tcp_mem[2] (4 MiB)"),
            "{}",
            small.message
        );
        assert!(
            small
                .fix
                .as_deref()
                .is_some_and(|x| x.contains("at least 4096 pages") && x.contains("'net.ipv4.tcp_mem=512 4096 4096'")),
            "{small:?}"
        );
        let big = tcp_memory(&facts(65536)).expect("f");
        assert_eq!(big.status, Status::Ok, "{big:?}");
        assert_eq!(
            big.message,
            "tcp_mem[2] = 64 MiB of 64 GiB RAM holds 1 flow \u{d7} 16 MiB"
        );
        let b = budget(&facts(65536)).expect("budget");
        assert_eq!(b.max_bytes(), Some(64 << 20));
        assert!(!b.exceeds_tcp_mem());
        assert_eq!(b.pages_needed(), 256);
        assert!(budget(&facts(4096)).expect("budget").exceeds_tcp_mem());
        // Pressure is judged in pages, whatever their size.
        let busy = MemoryFacts {
            in_use_pages: Some(600),
            ..facts(65536)
        };
        assert!(budget(&busy).expect("budget").under_pressure());
        assert!(tcp_memory(&busy).expect("f").message.contains("TCP uses 37.5 MiB now"));
    }
}
