//! The targets' bodies between their watch and their reconcile: the watches deliver whole
//! objects, which are turned at once into the metadata the controller keeps and, when the
//! target needs an estimate, its JSON text held here until its reconcile takes it. So a
//! reconcile reads nothing from the API server (the watch already had the object), and nothing
//! keeps whole objects: a body lives from its event to its estimate, and the bytes held are
//! bounded (the watch waits for room: backpressure on the API server's stream, not a buffer of
//! every object).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A target's JSON as its watch delivered it.
#[derive(Debug)]
pub struct Body {
    pub uid: Option<String>,
    pub generation: Option<i64>,
    pub text: String,
    _room: OwnedSemaphorePermit,
}

/// Bodies waiting for their reconcile, at most `bytes` of them.
#[derive(Debug)]
pub struct Pending {
    bodies: Mutex<HashMap<String, Body>>,
    kib: Arc<Semaphore>,
    total_kib: u32,
}

impl Default for Pending {
    fn default() -> Self {
        Pending::new(4 << 20)
    }
}

impl Pending {
    /// Room for `bytes` of bodies (at least 1 MiB); a body larger than that is held alone.
    pub fn new(bytes: usize) -> Self {
        let total_kib = u32::try_from((bytes / 1024).max(1024)).unwrap_or(u32::MAX >> 3);
        Pending {
            bodies: Mutex::default(),
            kib: Arc::new(Semaphore::new(total_kib as usize)),
            total_kib,
        }
    }

    fn kib_of(&self, text: &str) -> u32 {
        u32::try_from(text.len() / 1024 + 1)
            .unwrap_or(u32::MAX)
            .min(self.total_kib)
    }

    /// Waits until `text` fits, then holds it for `name` (replacing an older body).
    pub async fn put(
        &self,
        name: String,
        uid: Option<String>,
        generation: Option<i64>,
        text: String,
    ) {
        // An older body of the same target goes first: its room is ours.
        self.remove(&name);
        let room = self
            .kib
            .clone()
            .acquire_many_owned(self.kib_of(&text))
            .await
            .expect("never closed");
        self.insert(name, uid, generation, text, room);
    }

    /// Holds `text` for `name` if it fits now; otherwise drops it (the reconcile will read the
    /// target). For a body handed back by a reconcile that failed to write.
    pub fn try_put(
        &self,
        name: String,
        uid: Option<String>,
        generation: Option<i64>,
        text: String,
    ) {
        if let Ok(room) = self.kib.clone().try_acquire_many_owned(self.kib_of(&text)) {
            self.insert(name, uid, generation, text, room);
        }
    }

    fn insert(
        &self,
        name: String,
        uid: Option<String>,
        generation: Option<i64>,
        text: String,
        room: OwnedSemaphorePermit,
    ) {
        let body = Body {
            uid,
            generation,
            text,
            _room: room,
        };
        let mut bodies = self.bodies.lock().expect("pending lock");
        match bodies.get(&name) {
            // A newer body came meanwhile (`put` raced): keep the newer generation.
            Some(b) if b.uid == body.uid && b.generation > body.generation => {}
            _ => {
                bodies.insert(name, body);
            }
        }
    }

    /// The body held for `name`, if any; it is no longer held.
    pub fn take(&self, name: &str) -> Option<Body> {
        self.bodies.lock().expect("pending lock").remove(name)
    }

    /// Drops the body held for `name` (the target was deleted, or needs no estimate).
    pub fn remove(&self, name: &str) {
        let gone = self.bodies.lock().expect("pending lock").remove(name);
        drop(gone);
    }

    /// Drops every body (this replica stopped leading: it reconciles nothing).
    pub fn clear(&self) {
        let all = std::mem::take(&mut *self.bodies.lock().expect("pending lock"));
        drop(all);
    }

    /// Bytes held now (in KiB units, rounded up per body).
    pub fn held_kib(&self) -> usize {
        self.total_kib as usize - self.kib.available_permits()
    }

    /// Bodies held now.
    pub fn len(&self) -> usize {
        self.bodies.lock().expect("pending lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn bodies_are_bounded_and_taken_once() {
        let p = Arc::new(Pending::new(1 << 20));
        let big = "x".repeat(700 << 10);
        p.put("a".into(), Some("u".into()), Some(1), big.clone())
            .await;
        // No room for a second one: the watch waits.
        let waiting = tokio::time::timeout(
            Duration::from_millis(50),
            p.put("b".into(), Some("u".into()), Some(1), big.clone()),
        );
        assert!(waiting.await.is_err());
        p.try_put("c".into(), None, None, big.clone());
        assert_eq!(p.len(), 1);
        let a = p.take("a").unwrap();
        assert_eq!(a.generation, Some(1));
        assert!(p.take("a").is_none());
        drop(a);
        p.put("b".into(), Some("u".into()), Some(1), big.clone())
            .await;
        // A newer body replaces an older one and its room is given back.
        p.put("b".into(), Some("u".into()), Some(2), big).await;
        assert_eq!(p.take("b").unwrap().generation, Some(2));
        assert_eq!(p.held_kib(), 0);
        assert!(p.is_empty());
    }
}
