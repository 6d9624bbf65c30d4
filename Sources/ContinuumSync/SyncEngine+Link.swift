import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation

// Linking a device (PROTOCOL.md §7.8.19): the device that made the link code checks the new device's proof and,
// once it has the new device's consent, signs the `device-add`.

extension SyncEngine {
    /// The check of a link code's proof, bound to this connection.
    private func linkProof(
        _ link: Membership.Link,
        from peer: NodeID,
        nonces: (ours: SessionNonce, theirs: SessionNonce)
    ) -> @Sendable (Data) -> Bool {
        let linker = identity.node
        return { secret in
            MembershipProofs.linkMAC(
                secret: secret,
                linkerNonce: nonces.ours.bytes,
                deviceNonce: nonces.theirs.bytes,
                linker: linker,
                device: peer
            ) == link.mac
        }
    }

    /// A link: its proof checked against the ticket. Returns the account's records for LINKING; throws the ERROR
    /// that refuses it.
    func checkLink(
        _ link: Membership.Link,
        from peer: NodeID,
        nonces: (ours: SessionNonce, theirs: SessionNonce)
    ) async throws(WireError) -> [[UInt8]] {
        do {
            return try await store.checkLink(ticket: link.ticket, proves: linkProof(link, from: peer, nonces: nonces))
        } catch {
            logger.notice("refused a link", metadata: ["peer.id": "\(peer.short)", "reason": "\(error)"])
            throw WireError(.inviteRefused, "\(error)")
        }
    }

    /// The new device's consent: the `device-add` signed (the ticket used). Returns the LINKED's payload.
    func signLink(
        _ link: Membership.Link,
        consent: [UInt8],
        from peer: NodeID,
        nonces: (ours: SessionNonce, theirs: SessionNonce)
    ) async throws(WireError) -> LinkedAccount {
        let signed: (record: [UInt8], groups: [GroupID])
        do {
            signed = try await store.signDeviceAdd(
                ticket: link.ticket,
                device: AuthorID(unchecked: peer.bytes),
                consent: consent,
                proves: linkProof(link, from: peer, nonces: nonces)
            )
        } catch {
            logger.notice("refused a link", metadata: ["peer.id": "\(peer.short)", "reason": "\(error)"])
            throw WireError(.inviteRefused, "\(error)")
        }
        logger.notice("linked a device into this account", metadata: ["peer.id": "\(peer.short)"])
        await refreshMembership()
        return LinkedAccount(record: signed.record, groups: signed.groups)
    }

    /// A new device's consent to the account of a LINKING, whose records must make the peer a device of it; throws
    /// the ERROR that refuses the LINKING.
    func consent(to records: [[UInt8]], linker: NodeID) async throws(WireError) -> [UInt8] {
        do {
            guard try await store.canBeLinked() else {
                throw WireError(.inviteRefused, "this device has an account already; it cannot be linked")
            }
            let account = try AccountLink.account(of: records, linker: AuthorID(unchecked: linker.bytes))
            return Array(try identity.consent(toJoin: account))
        } catch let error as WireError {
            throw error
        } catch {
            throw WireError(.badRecord, "\(error)")
        }
    }
}

// Recovering an account (PROTOCOL.md §7.8.20): any node that holds the account answers a recovery key's proof with
// the account's records; the new device has the key add it, and sends those records back.

extension SyncEngine {
    /// A recovery: the recovery key's signature checked, bound to this connection. Returns the account's records
    /// for LINKING; throws the ERROR that refuses it.
    func checkRecovery(
        _ recovery: Membership.Recovery,
        from peer: NodeID,
        nonces: (ours: SessionNonce, theirs: SessionNonce)
    ) async throws(WireError) -> [[UInt8]] {
        guard
            MembershipProofs.isRecoverySignature(
                recovery.signature,
                key: recovery.key,
                receiverNonce: nonces.ours.bytes,
                deviceNonce: nonces.theirs.bytes,
                receiver: identity.node,
                device: peer
            )
        else {
            throw WireError(.inviteRefused, "the recovery key's signature does not match this session")
        }
        do {
            return try await store.recoveryRecords(key: recovery.key)
        } catch {
            logger.notice("refused a recovery", metadata: ["peer.id": "\(peer.short)", "reason": "\(error)"])
            throw WireError(.inviteRefused, "\(error)")
        }
    }

    /// A new device's recovery from the LINKING's records: the recovery key adds this device; returns RECOVERY's
    /// records and the account's groups.
    func recover(_ records: [[UInt8]], key: NodeIdentity, name: String?) async throws(WireError) -> RecoveredAccount {
        do {
            let recovered = try await store.recordRecovery(records: records, recovery: key, name: name)
            await refreshMembership()
            return RecoveredAccount(records: recovered.records, groups: recovered.groups)
        } catch {
            throw WireError(.inviteRefused, "\(error)")
        }
    }

    /// A RECOVERY from `peer`, answering the LINKING sent for `key`: its records stored, the peer a device of the
    /// account. Returns the groups the session shares now.
    func takeRecovery(_ records: [[UInt8]], key: AuthorID, from peer: NodeID) async throws(WireError) -> Set<GroupID> {
        do {
            try await store.takeRecovery(records, key: key, device: AuthorID(unchecked: peer.bytes))
        } catch {
            logger.notice("refused a RECOVERY", metadata: ["peer.id": "\(peer.short)", "reason": "\(error)"])
            throw WireError(.notMember, "\(error)")
        }
        logger.notice("a device recovered its account through this node", metadata: ["peer.id": "\(peer.short)"])
        await refreshMembership()
        return membership?.groupsShared(with: peer) ?? []
    }
}
