import ContinuumCore
import Crypto

extension NetworkID {
    /// A network key file holds at most this many bytes.
    public static let maxKeyBytes = 64 * 1024

    /// The network of a key: the SHA-256 of the UTF-8 bytes of `continuum-network-key-v1:` followed by the key's
    /// bytes, with trailing CR and LF bytes removed (so that `echo KEY > FILE` and `printf KEY > FILE` agree).
    /// Nil when nothing is left, or when the key is over ``maxKeyBytes``.
    public static func key(_ bytes: some Collection<UInt8>) -> NetworkID? {
        var key = Array(bytes)
        guard key.count <= maxKeyBytes else { return nil }
        while let last = key.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { key.removeLast() }
        guard !key.isEmpty else { return nil }
        return NetworkID(checked: Array(SHA256.hash(data: Array("continuum-network-key-v1:".utf8) + key)))
    }

    /// What LAN discovery advertises in its `net=` TXT entry: the first 16 bytes of the SHA-256 of
    /// `continuum-discovery-v1:` followed by the 32 bytes of the id, as 32 lowercase hex digits. It lets nodes
    /// skip services of other networks without telling the network id, which the HELLO requires.
    public var advertisedHash: String {
        Hex.encode(Array(SHA256.hash(data: Array("continuum-discovery-v1:".utf8) + bytes)).prefix(16))
    }
}
