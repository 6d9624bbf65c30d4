import Crypto
import Foundation

/// An account's recovery code (PROTOCOL.md §2.10): 16 random bytes shown as 12 words of the BIP-39 English list
/// (BIP-39's own layout: the 128 bits, then the first 4 bits of their SHA-256, cut into twelve 11-bit word numbers).
/// The recovery key is derived from the 16 bytes; no device keeps them, only the key's public half is in the
/// account's founding record.
public struct RecoveryCode: Sendable, Hashable {
    /// The 16 bytes of entropy.
    public let entropy: Data

    /// A new random code.
    public static func random() -> RecoveryCode {
        var generator = SystemRandomNumberGenerator()
        return RecoveryCode(entropy: Data((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }))
    }

    /// The code of these 16 bytes (test vectors); other lengths are a programming error.
    public init(entropy: Data) {
        precondition(entropy.count == 16, "a recovery code holds 16 bytes")
        self.entropy = entropy
    }

    /// The code written as words: 12 words of the list, separated by single spaces, in any case; extra spaces and
    /// line breaks are fine. Throws a message a person can act on.
    public init(words text: String) throws(RecoveryCodeError) {
        let given = text.lowercased().split(whereSeparator: { $0.isWhitespace || $0 == "," || $0 == "-" })
        guard given.count == 12 else {
            throw RecoveryCodeError(
                "a recovery code is 12 words; \(given.count == 1 ? "1 word was" : "\(given.count) words were") given"
            )
        }
        var bits: [Bool] = []
        for (index, word) in given.enumerated() {
            guard let value = Self.index[Substring(word)] else {
                throw RecoveryCodeError(
                    "word \(index + 1), '\(word)', is not a word of recovery codes: check its spelling"
                )
            }
            for shift in (0..<11).reversed() { bits.append((value >> shift) & 1 == 1) }
        }
        let bytes = stride(from: 0, to: 128, by: 8).map { start in
            bits[start..<start + 8].reduce(UInt8(0)) { $0 << 1 | ($1 ? 1 : 0) }
        }
        let code = RecoveryCode(entropy: Data(bytes))
        guard code.checksum == bits[128...].reduce(UInt8(0), { $0 << 1 | ($1 ? 1 : 0) }) else {
            throw RecoveryCodeError("these 12 words are not a recovery code: one of them is wrong, or two are swapped")
        }
        self = code
    }

    /// The 12 words.
    public var words: [String] {
        var bits: [Bool] = []
        for byte in entropy {
            for shift in (0..<8).reversed() { bits.append((byte >> UInt8(shift)) & 1 == 1) }
        }
        for shift in (0..<4).reversed() { bits.append((checksum >> UInt8(shift)) & 1 == 1) }
        return stride(from: 0, to: 132, by: 11).map { start in
            String(Self.words[bits[start..<start + 11].reduce(0) { $0 << 1 | ($1 ? 1 : 0) }])
        }
    }

    /// The recovery key: its Ed25519 seed is HKDF-SHA256 of the 16 bytes, no salt, info `continuum recovery key v3`.
    public var key: NodeIdentity {
        let seed = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: entropy),
            info: Data("continuum recovery key v3".utf8),
            outputByteCount: 32
        )
        // 32 bytes are always a valid Ed25519 seed.
        return seed.withUnsafeBytes { try! NodeIdentity(seed: $0) }
    }

    /// The first 4 bits of SHA-256 of the entropy.
    private var checksum: UInt8 { Array(SHA256.hash(data: entropy))[0] >> 4 }

    private static let index: [Substring: Int] = Dictionary(
        uniqueKeysWithValues: words.enumerated().map { ($1, $0) }
    )
}

/// A text that is not a recovery code, and why.
public struct RecoveryCodeError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}
