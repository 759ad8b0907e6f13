//! NIC offloads (TSO, GSO, GRO) through the SIOCETHTOOL ioctl — what `ethtool -k IF` shows,
//! without the ethtool program.
//!
//! ETHTOOL_GFEATURES gives, per feature bit, whether it is active and whether the user may
//! change it; the bit of each feature name comes from the ETH_SS_FEATURES string set
//! (ETHTOOL_GSSET_INFO + ETHTOOL_GSTRINGS), as the numbering differs between kernels. Kernels or
//! drivers without it fall back to the legacy ETHTOOL_GTSO / GGSO / GGRO (on/off only). The get
//! commands need no privilege. Linux only.

use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GTSO: u32 = 0x1e;
const ETHTOOL_GGSO: u32 = 0x23;
const ETHTOOL_GGRO: u32 = 0x2b;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETHTOOL_GFEATURES: u32 = 0x3a;
const ETH_SS_FEATURES: u32 = 4;
const ETH_GSTRING_LEN: usize = 32;
/// More feature names than any kernel has (about 70 in 6.x): a bound on what we allocate.
const MAX_FEATURES: u32 = 1024;

/// One offload's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Feature {
    pub on: bool,
    /// The driver does not let it be changed (`[fixed]` in `ethtool -k`); None when unknown
    /// (legacy ioctls).
    pub fixed: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Offloads {
    /// TCP segmentation offload (IPv4: tx-tcp-segmentation).
    pub tso: Option<Feature>,
    /// Generic segmentation offload (software; tx-generic-segmentation).
    pub gso: Option<Feature>,
    /// Generic receive offload (rx-gro).
    pub gro: Option<Feature>,
}

/// `struct ifreq` with the `ifr_data` member of the union (40 bytes on 64-bit, 32 on 32-bit).
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 24 - size_of::<*mut libc::c_void>()],
}

struct Sock(OwnedFd);

impl Sock {
    fn new() -> io::Result<Self> {
        // SAFETY: socket(2) takes no pointers; the result is checked before use.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// SIOCETHTOOL on `ifname` with the command buffer `buf` (its first u32 is the command).
    fn ethtool(&self, ifname: &str, buf: &mut [u32]) -> io::Result<()> {
        let bytes = ifname.as_bytes();
        if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "bad interface name"));
        }
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            data: buf.as_mut_ptr().cast(),
            _pad: [0; 24 - size_of::<*mut libc::c_void>()],
        };
        req.name[..bytes.len()].copy_from_slice(bytes);
        // SAFETY: `req` is a valid ifreq whose data pointer addresses `buf`, which is sized (by
        // every caller) for the command in buf[0] and its reply; both outlive the call.
        let rc = unsafe { libc::ioctl(self.0.as_raw_fd(), SIOCETHTOOL as _, &raw mut req) };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// The ETH_SS_FEATURES names, index = feature bit.
    fn feature_names(&self, ifname: &str) -> io::Result<Vec<String>> {
        // struct ethtool_sset_info: cmd, reserved, u64 sset_mask, u32 data[] — as u32 words.
        let mut info = [0u32; 6];
        info[0] = ETHTOOL_GSSET_INFO;
        let mask = 1u64 << ETH_SS_FEATURES;
        info[2..4].copy_from_slice(&split_u64(mask));
        self.ethtool(ifname, &mut info)?;
        if join_u64(info[2], info[3]) & mask == 0 {
            return Err(io::Error::new(io::ErrorKind::Unsupported, "no feature strings"));
        }
        let count = info[4].min(MAX_FEATURES);
        // struct ethtool_gstrings: cmd, string_set, len, u8 data[len * 32].
        let n = count as usize;
        let mut buf = vec![0u32; 3 + n * ETH_GSTRING_LEN / 4];
        buf[0] = ETHTOOL_GSTRINGS;
        buf[1] = ETH_SS_FEATURES;
        buf[2] = count;
        self.ethtool(ifname, &mut buf)?;
        let got = (buf[2] as usize).min(n);
        let bytes: Vec<u8> = buf[3..].iter().flat_map(|w| w.to_ne_bytes()).collect();
        Ok(bytes
            .chunks(ETH_GSTRING_LEN)
            .take(got)
            .map(|c| {
                let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
                String::from_utf8_lossy(&c[..end]).into_owned()
            })
            .collect())
    }

    fn features(&self, ifname: &str) -> io::Result<Offloads> {
        let names = self.feature_names(ifname)?;
        let blocks = names.len().div_ceil(32);
        // struct ethtool_gfeatures: cmd, size, then per block {available, requested, active,
        // never_changed}.
        let mut buf = vec![0u32; 2 + 4 * blocks];
        buf[0] = ETHTOOL_GFEATURES;
        buf[1] = u32::try_from(blocks).unwrap_or(0);
        self.ethtool(ifname, &mut buf)?;
        let feature = |name: &str| {
            let bit = names.iter().position(|n| n == name)?;
            let block = &buf[2 + 4 * (bit / 32)..2 + 4 * (bit / 32) + 4];
            let m = 1u32 << (bit % 32);
            Some(Feature {
                on: block[2] & m != 0,
                fixed: Some(block[0] & m == 0),
            })
        };
        Ok(Offloads {
            tso: feature("tx-tcp-segmentation"),
            gso: feature("tx-generic-segmentation"),
            gro: feature("rx-gro"),
        })
    }

    fn legacy(&self, ifname: &str, cmd: u32) -> Option<Feature> {
        let mut v = [cmd, 0u32];
        self.ethtool(ifname, &mut v).ok().map(|()| Feature {
            on: v[1] != 0,
            fixed: None,
        })
    }
}

fn split_u64(v: u64) -> [u32; 2] {
    let b = v.to_ne_bytes();
    [
        u32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
        u32::from_ne_bytes([b[4], b[5], b[6], b[7]]),
    ]
}

fn join_u64(a: u32, b: u32) -> u64 {
    let (a, b) = (a.to_ne_bytes(), b.to_ne_bytes());
    u64::from_ne_bytes([a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]])
}

/// TSO, GSO and GRO of interface `ifname` in this network namespace.
pub fn offloads(ifname: &str) -> io::Result<Offloads> {
    let s = Sock::new()?;
    match s.features(ifname) {
        Ok(o) => Ok(o),
        Err(e) if e.raw_os_error() == Some(libc::ENODEV) => Err(e),
        Err(_) => {
            let o = Offloads {
                tso: s.legacy(ifname, ETHTOOL_GTSO),
                gso: s.legacy(ifname, ETHTOOL_GGSO),
                gro: s.legacy(ifname, ETHTOOL_GGRO),
            };
            if o.tso.is_none() && o.gso.is_none() && o.gro.is_none() {
                Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "the driver answers no ethtool feature query",
                ))
            } else {
                Ok(o)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_gso_and_it_is_on() {
        let o = offloads("lo").expect("lo answers ethtool");
        let gso = o.gso.expect("gso");
        assert!(gso.on, "{o:?}");
        // lo's TSO is on and cannot be turned off... only on; the bit exists on every kernel.
        assert!(o.tso.is_some(), "{o:?}");
        assert!(matches!(
            offloads("no-such-if0").map_err(|e| e.raw_os_error()),
            Err(Some(libc::ENODEV))
        ));
        assert!(offloads("").is_err());
        assert!(offloads("a-name-far-too-long").is_err());
    }

    #[test]
    fn u64_words() {
        assert_eq!(
            join_u64(split_u64(0x1234_5678_9abc_def0)[0], split_u64(0x1234_5678_9abc_def0)[1]),
            0x1234_5678_9abc_def0
        );
    }
}
