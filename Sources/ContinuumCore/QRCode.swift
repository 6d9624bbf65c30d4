/// Why a text cannot be shown as a QR code.
public enum QRCodeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The text's UTF-8 bytes do not fit the largest version we make (``QRCode/maximumBytes``).
    case textTooLong(bytes: Int, limit: Int)

    public var description: String {
        switch self {
        case .textTooLong(let bytes, let limit):
            "text too long for a QR code: \(bytes) bytes of UTF-8, at most \(limit)"
        }
    }
}

/// A QR code (ISO/IEC 18004) of a short text: its modules, ready to be drawn.
///
/// The text is encoded as UTF-8 in byte mode, at error correction level M (about 15% of the symbol can be lost), in
/// the smallest of versions 1 to 10 that holds it: an invite code of 47 characters takes version 4 (33 × 33
/// modules). Of the eight data masks, the one with the lowest penalty (ISO/IEC 18004:2015 §7.8.3) is applied; a tie
/// goes to the lower mask number. A module outside the symbol counts as light there, as the quiet zone is, so a
/// 1:1:3:1:1 pattern at the edge is penalised; each such pattern counts once, whether light lies on one side of it
/// or on both. Everything is computed here, with no tables but the ones the standard prints.
public struct QRCode: Sendable, Hashable {
    /// The number of modules on a side: 21 for version 1, 4 more for each version after it.
    public let size: Int
    /// The version, 1 to 10: the smallest that holds the text.
    public let version: Int
    /// The data mask applied, 0 to 7.
    public let mask: Int
    /// Row by row, true for dark.
    private let modules: [Bool]

    /// The most UTF-8 bytes a code holds: what version 10 holds at level M.
    public static let maximumBytes = Version.capacity(10)

    /// Whether the module in column `x` and row `y` (both from 0, at the top left) is dark. Both must be below
    /// ``size``.
    public subscript(x: Int, y: Int) -> Bool {
        precondition(x >= 0 && x < size && y >= 0 && y < size, "a module inside the symbol")
        return modules[y * size + x]
    }

    /// Encodes the UTF-8 bytes of `text`, or throws if there are more than ``maximumBytes``.
    public init(encoding text: String) throws(QRCodeError) {
        let bytes = Array(text.utf8)
        guard let version = (1...10).first(where: { Version.capacity($0) >= bytes.count }) else {
            throw .textTooLong(bytes: bytes.count, limit: Self.maximumBytes)
        }
        let codewords = ReedSolomon.interleave(Version.dataCodewords(bytes, version: version), version)
        var symbol = Symbol(version: version)
        symbol.place(codewords)
        var best = (mask: 0, penalty: Int.max, symbol: symbol)
        for mask in 0..<8 {
            var masked = symbol
            masked.apply(mask: mask)
            let penalty = masked.penalty()
            if penalty < best.penalty { best = (mask, penalty, masked) }
        }
        self.size = best.symbol.size
        self.version = version
        self.mask = best.mask
        self.modules = best.symbol.modules
    }

    /// The code as lines of text, two rows of modules to a line, drawn with the half blocks "▀", "▄", "█" and
    /// spaces, inside a quiet zone two modules wide.
    ///
    /// The blocks are drawn in the terminal's text colour and the rest is its background. By default the blocks
    /// draw the light modules and the quiet zone, for light text on a dark background, the common case, so that the
    /// code reads dark on light. `invert` draws the dark modules instead, for dark text on a light background.
    /// There are (``size`` + 5) / 2 lines of ``size`` + 4 characters, joined by "\n", with no newline at the end.
    public func terminalText(invert: Bool = false) -> String {
        let quiet = 2
        let side = size + 2 * quiet
        // Whether the module at (x, y), counted from the corner of the quiet zone, is drawn with a block. Below the
        // quiet zone (the lower half of the last line when `side` is odd) nothing is drawn.
        func drawn(_ x: Int, _ y: Int) -> Bool {
            guard y < side else { return false }
            let (column, row) = (x - quiet, y - quiet)
            let dark = column >= 0 && column < size && row >= 0 && row < size && self[column, row]
            return dark == invert
        }
        var lines: [String] = []
        lines.reserveCapacity((side + 1) / 2)
        for top in stride(from: 0, to: side, by: 2) {
            var line = ""
            line.reserveCapacity(side * 3)
            for x in 0..<side {
                switch (drawn(x, top), drawn(x, top + 1)) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// The code as a standalone SVG document: a white square with a quiet zone four modules wide, and the dark
    /// modules as one black `<path>`, a rectangle for each horizontal run. Each module is `moduleSize` pixels
    /// (at least 1) on a side.
    public func svg(moduleSize: Int = 4) -> String {
        precondition(moduleSize > 0, "a module is at least one pixel")
        let quiet = 4
        let side = size + 2 * quiet
        var path = ""
        for y in 0..<size {
            var x = 0
            while x < size {
                guard self[x, y] else {
                    x += 1
                    continue
                }
                var run = 1
                while x + run < size && self[x + run, y] { run += 1 }
                path += "M\(x + quiet) \(y + quiet)h\(run)v1h-\(run)z"
                x += run
            }
        }
        let pixels = side * moduleSize
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(pixels)" height="\(pixels)" viewBox="0 0 \(side) \(side)" \
            shape-rendering="crispEdges"><rect width="\(side)" height="\(side)" fill="#fff"/>\
            <path fill="#000" d="\(path)"/></svg>
            """
    }
}

// MARK: - Versions and codewords

/// The versions we make, at level M: their blocks (ISO/IEC 18004:2015 Table 9), alignment patterns (Annex E) and
/// data codewords.
private enum Version {
    /// The blocks of a version at level M: error correction codewords per block, then the number of blocks and the
    /// data codewords in each, for the short blocks and the blocks one codeword longer that follow them.
    struct Blocks {
        var ecPerBlock: Int
        var short: (count: Int, data: Int)
        var long: (count: Int, data: Int)
    }

    static func blocks(_ version: Int) -> Blocks {
        switch version {
        case 1: Blocks(ecPerBlock: 10, short: (1, 16), long: (0, 0))
        case 2: Blocks(ecPerBlock: 16, short: (1, 28), long: (0, 0))
        case 3: Blocks(ecPerBlock: 26, short: (1, 44), long: (0, 0))
        case 4: Blocks(ecPerBlock: 18, short: (2, 32), long: (0, 0))
        case 5: Blocks(ecPerBlock: 24, short: (2, 43), long: (0, 0))
        case 6: Blocks(ecPerBlock: 16, short: (4, 27), long: (0, 0))
        case 7: Blocks(ecPerBlock: 18, short: (4, 31), long: (0, 0))
        case 8: Blocks(ecPerBlock: 22, short: (2, 38), long: (2, 39))
        case 9: Blocks(ecPerBlock: 22, short: (3, 36), long: (2, 37))
        case 10: Blocks(ecPerBlock: 26, short: (4, 43), long: (1, 44))
        default: preconditionFailure("versions 1 to 10")
        }
    }

    /// The centres of the alignment patterns, on each axis: every pair of them has one, but the three on a finder.
    static func alignmentCentres(_ version: Int) -> [Int] {
        switch version {
        case 1: []
        case 2...6: [6, 4 * version + 10]
        case 7: [6, 22, 38]
        case 8: [6, 24, 42]
        case 9: [6, 26, 46]
        case 10: [6, 28, 50]
        default: preconditionFailure("versions 1 to 10")
        }
    }

    static func dataCodewords(_ version: Int) -> Int {
        let blocks = blocks(version)
        return blocks.short.count * blocks.short.data + blocks.long.count * blocks.long.data
    }

    /// Bits of the character count in byte mode: 8 up to version 9, 16 from version 10.
    static func countBits(_ version: Int) -> Int { version < 10 ? 8 : 16 }

    /// The most bytes a version holds in byte mode: its data bits less the mode indicator and the count.
    static func capacity(_ version: Int) -> Int { (dataCodewords(version) * 8 - 4 - countBits(version)) / 8 }

    /// The data codewords (§7.4): mode 0100, the count, the bytes, a terminator of up to four zero bits, zero bits
    /// to the byte, then 0xEC and 0x11 in turn. The caller has checked that the bytes fit.
    static func dataCodewords(_ bytes: [UInt8], version: Int) -> [UInt8] {
        var bits = BitWriter()
        bits.append(0b0100, count: 4)
        bits.append(bytes.count, count: countBits(version))
        for byte in bytes { bits.append(Int(byte), count: 8) }
        let capacityBits = dataCodewords(version) * 8
        bits.append(0, count: min(4, capacityBits - bits.count))
        bits.append(0, count: (8 - bits.count % 8) % 8)
        var codewords = bits.bytes
        var pad: UInt8 = 0xEC
        while codewords.count < dataCodewords(version) {
            codewords.append(pad)
            pad ^= 0xEC ^ 0x11
        }
        return codewords
    }
}

/// Bits appended most significant first, packed into bytes.
private struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private(set) var count = 0

    mutating func append(_ value: Int, count width: Int) {
        for shift in stride(from: width - 1, through: 0, by: -1) {
            if count % 8 == 0 { bytes.append(0) }
            if (value >> shift) & 1 == 1 { bytes[count / 8] |= 0x80 >> UInt8(count % 8) }
            count += 1
        }
    }
}

// MARK: - Error correction

/// Reed-Solomon error correction over GF(256), with the field polynomial x⁸ + x⁴ + x³ + x² + 1 (0x11D) and the
/// generator polynomial (x - α⁰)(x - α¹)…(x - αⁿ⁻¹) of §7.5.2, α = 2.
private enum ReedSolomon {
    /// The product of two field elements.
    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        var product = 0
        for bit in stride(from: 7, through: 0, by: -1) {
            product = (product << 1) ^ ((product >> 7) * 0x11D)
            if (b >> UInt8(bit)) & 1 == 1 { product ^= Int(a) }
        }
        return UInt8(product)
    }

    /// The coefficients of the generator polynomial of degree `degree`, highest first, without the leading 1.
    static func generator(degree: Int) -> [UInt8] {
        var coefficients = [UInt8](repeating: 0, count: degree)
        coefficients[degree - 1] = 1
        var root: UInt8 = 1
        for _ in 0..<degree {
            // Multiply by (x - root), which in GF(256) is (x + root).
            for index in 0..<degree {
                coefficients[index] = multiply(coefficients[index], root)
                if index + 1 < degree { coefficients[index] ^= coefficients[index + 1] }
            }
            root = multiply(root, 2)
        }
        return coefficients
    }

    /// The remainder of the data, times xⁿ, divided by the generator: the `n` error correction codewords.
    static func remainder(_ data: ArraySlice<UInt8>, generator: [UInt8]) -> [UInt8] {
        var remainder = [UInt8](repeating: 0, count: generator.count)
        for byte in data {
            let factor = byte ^ remainder.removeFirst()
            remainder.append(0)
            for index in remainder.indices { remainder[index] ^= multiply(generator[index], factor) }
        }
        return remainder
    }

    /// Splits the data codewords into the version's blocks, adds each block's error correction, and interleaves
    /// (§7.6): the first data codeword of each block, then the second, and so on, then the error correction
    /// codewords the same way.
    static func interleave(_ data: [UInt8], _ version: Int) -> [UInt8] {
        let layout = Version.blocks(version)
        let generator = generator(degree: layout.ecPerBlock)
        var dataBlocks: [ArraySlice<UInt8>] = []
        var start = data.startIndex
        for (count, length) in [layout.short, layout.long] {
            for _ in 0..<count {
                dataBlocks.append(data[start..<start + length])
                start += length
            }
        }
        let ecBlocks = dataBlocks.map { remainder($0, generator: generator) }
        var result: [UInt8] = []
        result.reserveCapacity(data.count + ecBlocks.count * layout.ecPerBlock)
        for index in 0..<(dataBlocks.map(\.count).max() ?? 0) {
            for block in dataBlocks where index < block.count { result.append(block[block.startIndex + index]) }
        }
        for index in 0..<layout.ecPerBlock {
            for block in ecBlocks { result.append(block[index]) }
        }
        return result
    }
}

// MARK: - The matrix

/// The modules of a symbol being built, and which of them belong to function patterns (finders, separators,
/// timing, alignment, format and version information), which hold no data and are never masked.
private struct Symbol {
    let version: Int
    let size: Int
    private(set) var modules: [Bool]
    private var isFunction: [Bool]

    /// A symbol with its function patterns drawn; the format information is reserved, drawn as mask 0.
    init(version: Int) {
        self.version = version
        self.size = 4 * version + 17
        self.modules = [Bool](repeating: false, count: size * size)
        self.isFunction = [Bool](repeating: false, count: size * size)
        for index in 0..<size {
            setFunction(6, index, index % 2 == 0)
            setFunction(index, 6, index % 2 == 0)
        }
        for (x, y) in [(3, 3), (size - 4, 3), (3, size - 4)] {
            // The 7 × 7 finder and its light separator, cut at the symbol's edge.
            for dy in -4...4 {
                for dx in -4...4 where (0..<size).contains(x + dx) && (0..<size).contains(y + dy) {
                    let ring = max(abs(dx), abs(dy))
                    setFunction(x + dx, y + dy, ring != 2 && ring != 4)
                }
            }
        }
        let centres = Version.alignmentCentres(version)
        let last = centres.count - 1
        for (i, x) in centres.enumerated() {
            for (j, y) in centres.enumerated() {
                // Three corners hold the finders: the first centre with itself, and the first with the last.
                if (i, j) == (0, 0) || (i, j) == (0, last) || (i, j) == (last, 0) { continue }
                for dy in -2...2 {
                    for dx in -2...2 { setFunction(x + dx, y + dy, max(abs(dx), abs(dy)) != 1) }
                }
            }
        }
        drawFormat(mask: 0)
        if version >= 7 { drawVersion() }
    }

    private mutating func setFunction(_ x: Int, _ y: Int, _ dark: Bool) {
        modules[y * size + x] = dark
        isFunction[y * size + x] = true
    }

    /// The 15 bits of format information (§7.9): level M (00) and the mask, a BCH(15, 5) code with the generator
    /// 0x537, XORed with 0x5412. One copy goes around the top left finder, the other is split between the other two,
    /// with the dark module above the bottom left finder.
    private mutating func drawFormat(mask: Int) {
        let data = 0b00 << 3 | mask
        var remainder = data
        for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
        let bits = (data << 10 | remainder) ^ 0x5412
        func bit(_ index: Int) -> Bool { (bits >> index) & 1 == 1 }
        for index in 0..<6 { setFunction(8, index, bit(index)) }
        setFunction(8, 7, bit(6))
        setFunction(8, 8, bit(7))
        setFunction(7, 8, bit(8))
        for index in 9..<15 { setFunction(14 - index, 8, bit(index)) }
        for index in 0..<8 { setFunction(size - 1 - index, 8, bit(index)) }
        for index in 8..<15 { setFunction(8, size - 15 + index, bit(index)) }
        setFunction(8, size - 8, true)
    }

    /// The 18 bits of version information (§7.10), from version 7: the version, a BCH(18, 6) code with the generator
    /// 0x1F25. Two 6 × 3 copies, beside the top right and the bottom left finders.
    private mutating func drawVersion() {
        var remainder = version
        for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25) }
        let bits = version << 12 | remainder
        for index in 0..<18 {
            let dark = (bits >> index) & 1 == 1
            let (long, short) = (size - 11 + index % 3, index / 3)
            setFunction(long, short, dark)
            setFunction(short, long, dark)
        }
    }

    /// Places the codewords, most significant bit first, in two-module columns from the bottom right, going up
    /// then down and skipping the vertical timing pattern (§7.7.3). Modules left over (the remainder bits) stay
    /// light.
    mutating func place(_ codewords: [UInt8]) {
        var bitIndex = 0
        let bitCount = codewords.count * 8
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 }
            let upward = (right + 1) & 2 == 0
            for step in 0..<size {
                let y = upward ? size - 1 - step : step
                for x in [right, right - 1] where !isFunction[y * size + x] && bitIndex < bitCount {
                    modules[y * size + x] = (codewords[bitIndex / 8] >> UInt8(7 - bitIndex % 8)) & 1 == 1
                    bitIndex += 1
                }
            }
            right -= 2
        }
    }

    /// Inverts the data modules where the mask's condition holds (§7.8.2, x the column and y the row), and draws
    /// the format information for that mask.
    mutating func apply(mask: Int) {
        for y in 0..<size {
            for x in 0..<size where !isFunction[y * size + x] {
                let invert =
                    switch mask {
                    case 0: (x + y) % 2 == 0
                    case 1: y % 2 == 0
                    case 2: x % 3 == 0
                    case 3: (x + y) % 3 == 0
                    case 4: (x / 3 + y / 2) % 2 == 0
                    case 5: x * y % 2 + x * y % 3 == 0
                    case 6: (x * y % 2 + x * y % 3) % 2 == 0
                    default: ((x + y) % 2 + x * y % 3) % 2 == 0
                    }
                if invert { modules[y * size + x].toggle() }
            }
        }
        drawFormat(mask: mask)
    }

    /// The penalty of the whole symbol, format and version information included (§7.8.3.1, Table 11): 3 + (n - 5)
    /// for each run of n ≥ 5 modules of one colour in a row or column; 3 for each 2 × 2 block of one colour; 40 for
    /// each dark-light-dark-dark-dark-light-dark pattern in a row or column with four light modules before or after
    /// it (beyond the edge counts as light); 10 for each full 5% by which the dark modules depart from half.
    func penalty() -> Int {
        var penalty = 0
        for line in 0..<size {
            penalty += linePenalty { modules[line * size + $0] }
            penalty += linePenalty { modules[$0 * size + line] }
        }
        for y in 0..<size - 1 {
            for x in 0..<size - 1 {
                let colour = modules[y * size + x]
                if modules[y * size + x + 1] == colour && modules[(y + 1) * size + x] == colour
                    && modules[(y + 1) * size + x + 1] == colour
                {
                    penalty += 3
                }
            }
        }
        let dark = modules.count(where: { $0 })
        let total = size * size
        penalty += 10 * (abs(dark * 20 - total * 10) / total)
        return penalty
    }

    /// The run and finder-like penalties of one row or column, given its module at each position.
    private func linePenalty(_ module: (Int) -> Bool) -> Int {
        var penalty = 0
        var run = 0
        for index in 0..<size {
            if index > 0 && module(index) == module(index - 1) {
                run += 1
            } else {
                run = 1
            }
            if run == 5 {
                penalty += 3
            } else if run > 5 {
                penalty += 1
            }
        }
        func light(_ range: Range<Int>) -> Bool { range.allSatisfy { !(0..<size).contains($0) || !module($0) } }
        let pattern = [true, false, true, true, true, false, true]
        for start in 0...(size - pattern.count) {
            guard pattern.indices.allSatisfy({ module(start + $0) == pattern[$0] }) else { continue }
            if light(start - 4..<start) || light(start + 7..<start + 11) { penalty += 40 }
        }
        return penalty
    }
}
