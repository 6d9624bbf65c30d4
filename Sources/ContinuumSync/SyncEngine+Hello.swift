import ContinuumCore
import ContinuumWire

// HELLO in the engine: what a peer's HELLO must say for a session to go on (PROTOCOL.md §7.8.3).

extension SyncEngine {
    /// Checks a peer's HELLO against ours and the TLS identity. A peer of a later protocol version passes: the
    /// session runs at this node's version, and the later one decides whether it speaks it (PROTOCOL.md §7.4.1).
    func check(_ theirs: Hello, tlsPeer: AuthorID?) throws(WireError) {
        guard theirs.protocolVersion >= WireLimits.protocolVersion else {
            throw WireError(
                .unsupportedVersion,
                "the peer speaks protocol version \(theirs.protocolVersion); this node speaks version "
                    + "\(WireLimits.protocolVersion), whose records (reactions, kinds to come) a node of version "
                    + "\(theirs.protocolVersion) cannot keep: upgrade the peer's continuum-node"
            )
        }
        guard theirs.node != identity.author else {
            throw WireError(.selfConnection, "the peer claims this node's own identity")
        }
        guard theirs.plaintext == configuration.plaintext else {
            throw WireError(
                .plaintextRefused,
                "--insecure-plaintext must be set on both peers or neither"
            )
        }
        if let tlsPeer, tlsPeer != theirs.node {
            throw WireError(
                .identityMismatch,
                "HELLO names \(theirs.node.short) but the TLS certificate is \(tlsPeer.short)"
            )
        }
    }
}
