import ContinuumCore
import ContinuumWire

// Follows between the devices of one account (PROTOCOL.md §7.8.21): each sends its follows (FOLLOWS) to a session
// with another device of its account, after the handshake and whenever they change; per post, the later change wins.

extension SyncEngine {
    /// Whether `peer` is another live device of this node's account, by this node's records.
    func isOwnDevice(_ peer: AuthorID) -> Bool {
        guard let membership, peer != identity.author else { return false }
        let mine = membership.devices[identity.node] ?? []
        return !mine.isDisjoint(with: membership.devices[NodeID(unchecked: peer.bytes)] ?? [])
    }

    /// Sends this node's follows to `session` when its peer is another device of this node's account.
    func shareFollows(with session: PeerSession) async {
        guard isOwnDevice(session.peer) else { return }
        let entries: [FollowEntry]
        do {
            entries = try await store.followStates()
        } catch {
            // The next change of the follows, or the next session, shares them.
            logger.failure("reading the follows failed; not shared with the device", error)
            return
        }
        await session.sendFollows(entries)
    }

    /// Sends this node's follows to every session with another device of its account.
    func shareFollows() async {
        for session in sessions.values where isOwnDevice(session.peer) { await shareFollows(with: session) }
    }

    /// A FOLLOWS from `peer`: taken when the peer is another device of this node's account, the later change winning
    /// per post; from any other peer it is ignored, as an optional message this node does not take from it.
    func receivedFollows(_ entries: [FollowEntry], from peer: AuthorID) async {
        guard isOwnDevice(peer) else {
            logger.debug(
                "ignored a FOLLOWS from a peer that is no device of this account",
                metadata: ["peer.id": "\(peer.short)"]
            )
            return
        }
        let changed: Int
        do {
            changed = try await store.mergeFollows(entries)
        } catch {
            // The device sends its follows again at its next change or session; nothing here changed.
            logger.failure("taking the follows of another device failed", error)
            return
        }
        guard changed > 0 else { return }
        logger.info(
            "took follows from another device of this account",
            metadata: ["peer.id": "\(peer.short)", "changed": "\(changed)"]
        )
        await followsChanged()
    }
}
