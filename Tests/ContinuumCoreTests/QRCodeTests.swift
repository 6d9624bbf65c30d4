import ContinuumCore
import Testing

/// A text and the symbol another encoder makes of it.
///
/// The rows (top to bottom, "1" for dark) were written by python-qrcode 8.2 (the PyPI package `qrcode`):
/// `QRCode(error_correction=ERROR_CORRECT_M, border=0, version=…, mask_pattern=…)` given
/// `QRData(text.encode("utf-8"), mode=MODE_8BIT_BYTE)`. The version is the one python-qrcode fits the text to. The
/// mask is the one zxing's penalty rules (`MaskUtil`, `Encoder.chooseMaskPattern`) choose among python-qrcode's
/// eight symbols, as ours do; python-qrcode left to itself picks mask 2 for "HELLO" and 0 for the invite code,
/// because it scores the 1:1:3:1:1 pattern differently (not at the edge of the symbol, and twice when light lies on
/// both sides).
struct QRReference: Sendable, CustomTestStringConvertible {
    var text: String
    var version: Int
    var mask: Int
    var rows: [String]

    var testDescription: String { "version \(version), \(text.utf8.count) bytes" }

    static let all = [hello, invite, lowercase, versionSeven]

    static let hello = QRReference(
        text: "HELLO",
        version: 1,
        mask: 3,
        rows: [
            "111111101001001111111",
            "100000101111001000001",
            "101110100010101011101",
            "101110101010101011101",
            "101110100001001011101",
            "100000100001101000001",
            "111111101010101111111",
            "000000001001100000000",
            "101101110101101001011",
            "011011010111111001100",
            "100010100101000000011",
            "101100010001001111010",
            "010111111000100100101",
            "000000001111001000101",
            "111111101001100100000",
            "100000101010000111110",
            "101110100000111111011",
            "101110101011001011110",
            "101110101100101100100",
            "100000100010010110001",
            "111111101010010100000",
        ]
    )

    static let invite = QRReference(
        text: "041T2-1XZYF-711FG-024H3-6H2NC-SVRH6-E0N00-H877W",
        version: 4,
        mask: 6,
        rows: [
            "111111101111111011110100101111111",
            "100000101100111010111110001000001",
            "101110101000111010011101001011101",
            "101110100000001010101110001011101",
            "101110101001110110000110101011101",
            "100000100101001111110011101000001",
            "111111101010101010101010101111111",
            "000000000010010110100010100000000",
            "100111111100111011101011010010111",
            "100010001011110001011001111111101",
            "110111100111010100001011010001111",
            "011101010001010100110001001011101",
            "011011110011110001010100011110011",
            "001010010101101000111011100100000",
            "000111100111001101111110111110110",
            "011011010100011010001000101010101",
            "010101110111110100100110111010001",
            "010000011010111001110010110011110",
            "011011100011100111111001111010101",
            "010001001001011100011011011111110",
            "000110111001010110110110110001100",
            "111011001011101001000010010011110",
            "101101110111001001011011000001001",
            "100110000000000101011011001111111",
            "111011100010001000100100111111000",
            "000000001110001101001100100011101",
            "111111101000010111011000101010100",
            "100000101101010011100111100010110",
            "101110101011110011010111111110001",
            "101110101100010011100010110000001",
            "101110100010100100010001001110111",
            "100000100010100000111010011011111",
            "111111101101011110010010110110100",
        ]
    )

    static let lowercase = QRReference(
        text: "abcdefghijklmnopqrst",
        version: 2,
        mask: 2,
        rows: [
            "1111111000000010101111111",
            "1000001001010101101000001",
            "1011101010111001001011101",
            "1011101011010111101011101",
            "1011101010111010101011101",
            "1000001011111101001000001",
            "1111111010101010101111111",
            "0000000010101011000000000",
            "1011111001110111101111100",
            "0001010000111010100101000",
            "1100101000001011100100111",
            "0001100000101000100010000",
            "1000011111010000011011101",
            "1000100111101100100100000",
            "1000111110000111000001011",
            "1000010100001100110010011",
            "1010101010101010111111101",
            "0000000011000001100010000",
            "1111111000011000101010011",
            "1000001010110010100010001",
            "1011101011110001111111111",
            "1011101010101110011010011",
            "1011101011000110100101101",
            "1000001000001101110110001",
            "1111111010001010001101111",
        ]
    )

    static let versionSeven = QRReference(
        text: "https://continuum.example/invite?code=041T2-1XZYF-711FG-024H3-6H2NC-SVRH6-E0N00-H877W"
            + "&from=photos-of-the-family-group",
        version: 7,
        mask: 2,
        rows: [
            "111111100001110010110000000101101100101111111",
            "100000100010111101000011111111011001001000001",
            "101110101011011111110100111010101101001011101",
            "101110101011110100111111010101110001101011101",
            "101110101100010111011111110001101011101011101",
            "100000101111100110101000101011110000001000001",
            "111111101010101010101010101010101010101111111",
            "000000001011101011101000101010111101000000000",
            "101111100101111000111111100000100011101111100",
            "001111000110001001111001010001110001100011111",
            "001110110000010011100111101000110110011101110",
            "111001011110000000011001110110111001110110100",
            "101110110010101001101111111101100101000101001",
            "100111011001010110011100000001110100110011101",
            "110000110100100000001100111110011010101100010",
            "110010000011111010110101001101101100100101100",
            "010111111110001100111101100001110110011000101",
            "001100011100100011011000100001110001100111011",
            "010000111001100001011001111011001101001011000",
            "101101010010011101100100010110001001011111110",
            "000111111100000001101111111100110100111111011",
            "001010001000100101011000110111110001100011101",
            "010110101011111101001010111001111110101010110",
            "001010001001011000001000100111000010100011100",
            "100111111101000111001111110000010010111111010",
            "011000001011000100111111110110110001010001001",
            "111100101010010110101010001011011110010011010",
            "100111010110100000100001100011001100001011110",
            "101110101000011101111100110001100000001010010",
            "100011011011001010100010100101101001101000001",
            "010011110101010100001001011010000000000100110",
            "010101011010000010000111110111101111101100100",
            "000000111110100100000001011101110100010011000",
            "101010011101110010111011000101100100010001101",
            "000010111001101110000011111100010011100010100",
            "011110011010010101110111100100001111111011111",
            "100110100001011101001111101000000100111110000",
            "000000001100010000011000110001110001100011111",
            "111111100011110100111010101111110111101010110",
            "100000101011000100001000111110101011100011110",
            "101110101111100010101111110100100111111111001",
            "101110101101111101000011010000101000011100111",
            "101110101000010111100101111011010011110001010",
            "100000100010010100001010100110011001010111100",
            "111111101000011101110011110001100101010100010",
        ]
    )

}

@Suite("QR codes")
struct QRCodeTests {
    /// The code's rows, top to bottom, "1" for dark.
    static func rows(_ code: QRCode) -> [String] {
        (0..<code.size).map { y in String((0..<code.size).map { x in code[x, y] ? "1" : "0" }) }
    }

    @Test("the same modules, version and mask as the reference encoder", arguments: QRReference.all)
    func matchesReference(_ reference: QRReference) throws {
        let code = try QRCode(encoding: reference.text)
        #expect(code.version == reference.version)
        #expect(code.size == 4 * reference.version + 17)
        #expect(code.mask == reference.mask)
        #expect(Self.rows(code) == reference.rows)
    }

    @Test("the smallest version that holds the UTF-8 bytes, and an error past version 10")
    func versions() throws {
        // Bytes in byte mode at level M, versions 1 to 10 (ISO/IEC 18004:2015 Table 7).
        let capacities = [14, 26, 42, 62, 84, 106, 122, 152, 180, 213]
        for (index, capacity) in capacities.enumerated() {
            #expect(try QRCode(encoding: String(repeating: "a", count: capacity)).version == index + 1)
            #expect(try QRCode(encoding: String(repeating: "a", count: max(capacity - 1, 0))).version == index + 1)
        }
        #expect(QRCode.maximumBytes == 213)
        #expect(try QRCode(encoding: "").version == 1)
        #expect(throws: QRCodeError.textTooLong(bytes: 214, limit: 213)) {
            try QRCode(encoding: String(repeating: "a", count: 214))
        }
        // Bytes, not characters: 107 "é" are 214 bytes.
        #expect(throws: QRCodeError.textTooLong(bytes: 214, limit: 213)) {
            try QRCode(encoding: String(repeating: "é", count: 107))
        }
        #expect(
            QRCodeError.textTooLong(bytes: 214, limit: 213).description
                == "text too long for a QR code: 214 bytes of UTF-8, at most 213"
        )
    }

    /// The half rows that a terminal text draws with blocks, two to a line, top first.
    static func drawn(_ text: String) -> [[Bool]] {
        var rows: [[Bool]] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let halves = line.map { character -> (top: Bool, bottom: Bool) in
                switch character {
                case "█": (true, true)
                case "▀": (true, false)
                case "▄": (false, true)
                default: (false, false)
                }
            }
            rows.append(halves.map(\.top))
            rows.append(halves.map(\.bottom))
        }
        return rows
    }

    @Test("terminal text: two rows to a line, in a quiet zone two modules wide", arguments: QRReference.all)
    func terminalText(_ reference: QRReference) throws {
        let code = try QRCode(encoding: reference.text)
        let side = code.size + 4
        for invert in [false, true] {
            let text = code.terminalText(invert: invert)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == (code.size + 5) / 2)
            #expect(lines.allSatisfy { $0.count == side && $0.allSatisfy { "▀▄█ ".contains($0) } })
            // Block for light by default, for dark when inverted; nothing below the quiet zone.
            let expected = (0..<lines.count * 2).map { y in
                (0..<side).map { x in
                    guard y < side else { return false }
                    let (column, row) = (x - 2, y - 2)
                    let inside = (0..<code.size).contains(column) && (0..<code.size).contains(row)
                    return (inside && code[column, row]) == invert
                }
            }
            #expect(Self.drawn(text) == expected)
        }
        #expect(try QRCode(encoding: "HELLO").terminalText().split(separator: "\n").count == 13)
    }

    @Test("SVG: one path of the dark modules, in a quiet zone four modules wide", arguments: QRReference.all)
    func svg(_ reference: QRReference) throws {
        let code = try QRCode(encoding: reference.text)
        let side = code.size + 8
        let svg = code.svg(moduleSize: 3)
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(side * 3)\" height=\"\(side * 3)\""))
        #expect(svg.contains("viewBox=\"0 0 \(side) \(side)\""))
        #expect(svg.hasSuffix("</svg>"))
        #expect(svg.matches(of: #/<path /#).count == 1)
        let path = try #require(svg.firstMatch(of: #/ d="([^"]*)"/#)).1
        var dark: Set<[Int]> = []
        for run in path.matches(of: #/M(\d+) (\d+)h(\d+)v1h-(\d+)z/#) {
            let (x, y, length) = (Int(run.1)!, Int(run.2)!, Int(run.3)!)
            #expect(run.4 == run.3)
            for offset in 0..<length { dark.insert([x + offset - 4, y - 4]) }
        }
        var expected: Set<[Int]> = []
        for y in 0..<code.size {
            for x in 0..<code.size where code[x, y] { expected.insert([x, y]) }
        }
        #expect(dark == expected)
        #expect(path.replacing(#/M\d+ \d+h\d+v1h-\d+z/#, with: "").isEmpty)
    }
}
