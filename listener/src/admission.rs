//! Admission: how many connections are open, in all and per address, and
//! whether one more may be.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::ConnectionLimits;

/// Counts of open connections, in all and per address.
#[derive(Default)]
pub(crate) struct Admission {
    total: AtomicUsize,
    per_ip: Mutex<HashMap<IpAddr, usize>>,
    closed: Notify,
}

impl Admission {
    /// A slot for a connection from `ip`, or none when a cap is reached.
    pub(crate) fn admit(self: &Arc<Self>, ip: IpAddr, limits: &ConnectionLimits) -> Option<Slot> {
        if self.total.fetch_add(1, Ordering::AcqRel) >= limits.max_connections {
            self.total.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let group = if limits.uncapped.iter().any(|rule| rule.contains(ip)) {
            None
        } else {
            Some(weiport_access::limits::client_group(ip, limits.ipv6_prefix))
        };
        if let Some(group) = group {
            let mut per_ip = self.per_ip.lock().unwrap_or_else(|e| e.into_inner());
            let open = per_ip.entry(group).or_default();
            if *open >= limits.max_connections_per_ip {
                drop(per_ip);
                self.total.fetch_sub(1, Ordering::AcqRel);
                return None;
            }
            *open += 1;
        }
        Some(Slot {
            admission: self.clone(),
            group,
        })
    }

    /// Resolves once no connection is open.
    pub(crate) async fn drained(&self) {
        loop {
            let closed = self.closed.notified();
            if self.total.load(Ordering::Acquire) == 0 {
                return;
            }
            closed.await;
        }
    }
}

/// One admitted connection; gives its place back when dropped.
pub(crate) struct Slot {
    admission: Arc<Admission>,
    group: Option<IpAddr>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(group) = self.group {
            let mut per_ip = self
                .admission
                .per_ip
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(open) = per_ip.get_mut(&group) {
                *open -= 1;
                if *open == 0 {
                    per_ip.remove(&group);
                }
            }
        }
        self.admission.total.fetch_sub(1, Ordering::AcqRel);
        self.admission.closed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_caps_per_address_and_in_all() {
        let admission = Arc::new(Admission::default());
        let limits = crate::test_limits();
        let a: IpAddr = "2001:db8::1".parse().unwrap();
        let a_neighbour: IpAddr = "2001:db8::2".parse().unwrap();
        let first = admission.admit(a, &limits).unwrap();
        let _second = admission.admit(a_neighbour, &limits).unwrap();
        assert!(admission.admit(a, &limits).is_none(), "same /64");
        let _proxy = admission
            .admit("10.1.2.3".parse().unwrap(), &limits)
            .unwrap();
        assert!(
            admission
                .admit("192.0.2.1".parse().unwrap(), &limits)
                .is_none(),
            "total"
        );
        drop(first);
        assert!(admission.admit(a, &limits).is_some());
        assert_eq!(admission.total.load(Ordering::Acquire), 3 - 1);
    }
}
