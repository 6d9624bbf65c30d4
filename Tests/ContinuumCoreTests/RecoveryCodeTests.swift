import ContinuumCore
import Foundation
import Testing

/// Expected words from python-mnemonic 0.21 (`Mnemonic("english").to_mnemonic`), expected keys from Python's
/// `cryptography` (HKDF-SHA256, salt None, info `continuum recovery key v3`, then Ed25519): both independent of this
/// code.
@Suite("Recovery codes: BIP-39 words, their checksum, the recovery key")
struct RecoveryCodeTests {
    @Test(
        "16 bytes as 12 words, as python-mnemonic writes them",
        arguments: [
            (
                Data(0xe0...0xef),
                "thought audit rib six fury initial photo diary typical guess knife test"
            ),
            (
                Data(count: 16),
                "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
            ),
            (Data(repeating: 0xff, count: 16), "zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo wrong"),
        ]
    )
    func words(entropy: Data, expected: String) throws {
        let code = RecoveryCode(entropy: entropy)
        #expect(code.words.joined(separator: " ") == expected)
        #expect(try RecoveryCode(words: expected) == code)
        #expect(try RecoveryCode(words: "  " + expected.uppercased().replacingOccurrences(of: " ", with: "\n")) == code)
    }

    @Test("the recovery key of e0 … ef, as Python's cryptography derives it")
    func key() {
        let code = RecoveryCode(entropy: Data(0xe0...0xef))
        #expect(code.key.author.hex == "de38b8f020ffbd82ec7f4afa39cd697b94029aa2d3093cf164349c651454bc09")
    }

    @Test(
        "refused with a message a person can act on",
        arguments: [
            (
                "thought audit rib six fury initial photo diary typical guess knife",
                "a recovery code is 12 words; 11 words were given"
            ),
            (
                "thought audit rib six fury initial photo diary typicall guess knife test",
                "word 9, 'typicall', is not a word of recovery codes: check its spelling"
            ),
            (
                "audit thought rib six fury initial photo diary typical guess knife test",
                "these 12 words are not a recovery code: one of them is wrong, or two are swapped"
            ),
            ("", "a recovery code is 12 words; 0 words were given"),
        ]
    )
    func refused(text: String, message: String) {
        #expect(throws: RecoveryCodeError.self) { try RecoveryCode(words: text) }
        do {
            _ = try RecoveryCode(words: text)
        } catch {
            #expect(error.description == message)
        }
    }

    @Test("a random code reads back; 7f … 7f is BIP-39's own test vector")
    func randomAndVector() throws {
        let code = RecoveryCode.random()
        #expect(code.words.count == 12)
        #expect(try RecoveryCode(words: code.words.joined(separator: " ")) == code)
        #expect(
            RecoveryCode(entropy: Data(repeating: 0x7f, count: 16)).words.joined(separator: " ")
                == "legal winner thank year wave sausage worth useful legal winner thank yellow"
        )
    }
}
