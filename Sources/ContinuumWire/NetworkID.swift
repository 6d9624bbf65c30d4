import ContinuumCore
import Crypto

/// The 32-byte id of a continuum network: nodes only talk to peers that announce the same one in HELLO.
///
/// Named networks are the SHA-256 of a fixed prefix and the name, so two groups on one LAN can keep apart by
/// choosing different names; the id is not a secret.
public struct NetworkID: Hashable, Sendable, CustomStringConvertible {
    /// The 32 bytes.
    public let bytes: [UInt8]

    /// Wraps 32 bytes, or returns nil for any other length.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        self.bytes = Array(bytes)
    }

    /// Parses 64 hex digits (either case), or returns nil.
    public init?(hex: some StringProtocol) {
        guard hex.utf8.count == 64, let data = Hex.decode(hex) else { return nil }
        self.init(bytes: data)
    }

    /// The network of that name: the SHA-256 of the UTF-8 bytes of `continuum-network-v1:` followed by the name.
    public static func named(_ name: String) -> NetworkID {
        NetworkID(checked: Array(SHA256.hash(data: Array("continuum-network-v1:\(name)".utf8))))
    }

    /// The network a node joins unless told otherwise: `named("default")`.
    public static let `default` = named("default")

    /// The 64 lowercase hex digits.
    public var hex: String { Hex.encode(bytes) }

    /// The first 12 hex digits, for display.
    public var short: String { String(hex.prefix(12)) }

    public var description: String { hex }

    /// Wraps bytes that the caller has checked are 32 long.
    init(checked bytes: [UInt8]) {
        assert(bytes.count == 32)
        self.bytes = bytes
    }
}
