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
