import ContinuumWire

/// The release of continuum-node, and the protocol it speaks (Docs/PROTOCOL.md). `--version` prints both; the
/// Debian package (scripts/package.sh) takes its version from here.
public enum NodeVersion {
    /// The release, as `MAJOR.MINOR.PATCH`.
    public static let release = "0.3.0"

    /// The sync protocol's version, sent in HELLO and announced in discovery.
    public static let syncProtocol = WireLimits.protocolVersion

    /// What `continuum-node --version` prints: `0.3.0 (protocol 3)`.
    public static let description = "\(release) (protocol \(syncProtocol))"
}
