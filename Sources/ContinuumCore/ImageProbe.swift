import Foundation

/// What the header of an image file says.
public struct ImageInfo: Sendable, Hashable {
    public var mediaType: MediaType
    public var width: UInt32
    public var height: UInt32

    public init(mediaType: MediaType, width: UInt32, height: UInt32) {
        self.mediaType = mediaType
        self.width = width
        self.height = height
    }
}

/// Why a file is not an image we accept.
public enum ImageProbeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The content matches none of JPEG, PNG, HEIC, WebP or GIF.
    case unrecognised
    /// The format was recognised, but the file is cut short or its header is inconsistent.
    case corrupt(MediaType, String)

    public var description: String {
        switch self {
        case .unrecognised: "not an image: the content is not JPEG, PNG, HEIC, WebP or GIF"
        case .corrupt(let type, let why): "corrupt \(type.formatName) image: \(why)"
        }
    }
}

/// Recognises images by their content, never by their name, and reads the pixel size from the header.
///
/// It also checks that the file is structurally complete where the format makes that cheap (JPEG has an end
/// of image after its scan, PNG reaches IEND, WebP and GIF are as long as their headers say), so that a
/// truncated upload is refused rather than stored.
public enum ImageProbe {
    /// Reads only the bytes it needs, in place: a memory-mapped file is not copied.
    public static func inspect(_ data: Data) throws(ImageProbeError) -> ImageInfo {
        let result = data.withUnsafeBytes { raw in
            Result { () throws(ImageProbeError) -> ImageInfo in try inspect(bytes: raw) }
        }
        return try result.get()
    }

    /// The bytes a file's format is recognised by: its first ``signatureLength``.
    public static let signatureLength = 12

    /// The format a file's first bytes announce (at least ``signatureLength`` of them, or the whole file), without
    /// reading further; nil when they announce none of JPEG, PNG, HEIC, WebP or GIF.
    public static func format(ofSignature bytes: some Collection<UInt8>) -> MediaType? {
        let head = Array(bytes.prefix(signatureLength))
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if head.starts(with: Array("GIF87a".utf8)) || head.starts(with: Array("GIF89a".utf8)) { return .gif }
        if head.count >= 12, head.starts(with: Array("RIFF".utf8)), Array(head[8..<12]) == Array("WEBP".utf8) {
            return .webp
        }
        if head.count >= 12, Array(head[4..<8]) == Array("ftyp".utf8) { return .heic }
        return nil
    }

    private static func inspect(bytes: UnsafeRawBufferPointer) throws(ImageProbeError) -> ImageInfo {
        switch format(ofSignature: bytes) {
        case .jpeg: try jpeg(bytes)
        case .png: try png(bytes)
        case .gif: try gif(bytes)
        case .webp: try webp(bytes)
        case .heic: try heic(bytes)
        case nil: throw .unrecognised
        }
    }

    private static func be16(_ b: UnsafeRawBufferPointer, _ i: Int) -> UInt32 { UInt32(b[i]) << 8 | UInt32(b[i + 1]) }
    private static func le16(_ b: UnsafeRawBufferPointer, _ i: Int) -> UInt32 { UInt32(b[i]) | UInt32(b[i + 1]) << 8 }
    private static func le24(_ b: UnsafeRawBufferPointer, _ i: Int) -> UInt32 { le16(b, i) | UInt32(b[i + 2]) << 16 }
    private static func be32(_ b: UnsafeRawBufferPointer, _ i: Int) -> UInt32 { be16(b, i) << 16 | be16(b, i + 2) }
    private static func le32(_ b: UnsafeRawBufferPointer, _ i: Int) -> UInt32 { le16(b, i) | le16(b, i + 2) << 16 }

    private static func jpeg(_ b: UnsafeRawBufferPointer) throws(ImageProbeError) -> ImageInfo {
        var i = 2
        var size: (UInt32, UInt32)?
        while i + 4 <= b.count {
            guard b[i] == 0xFF else { throw .corrupt(.jpeg, "bad marker at byte \(i)") }
            let marker = b[i + 1]
            if marker == 0xFF {
                i += 1
                continue
            }  // fill byte
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) {
                i += 2
                continue
            }
            let length = Int(be16(b, i + 2))
            guard length >= 2, i + 2 + length <= b.count else { throw .corrupt(.jpeg, "segment runs past the end") }
            let isFrame = (0xC0...0xCF).contains(marker) && marker != 0xC4 && marker != 0xC8 && marker != 0xCC
            if isFrame {
                guard length >= 7 else { throw .corrupt(.jpeg, "short frame header") }
                size = (be16(b, i + 7), be16(b, i + 5))
            }
            if marker == 0xDA {
                guard let (width, height) = size else { throw .corrupt(.jpeg, "scan before frame header") }
                // Entropy-coded data never holds FF D9 (FF is always stuffed), so the image is complete
                // exactly when an end-of-image marker follows the scan. Data after it (motion photos) is allowed.
                var j = i + 2 + length
                while j + 1 < b.count {
                    if b[j] == 0xFF && b[j + 1] == 0xD9 { return try sized(.jpeg, width, height) }
                    j += 1
                }
                throw .corrupt(.jpeg, "the file ends before the end-of-image marker (truncated)")
            }
            i += 2 + length
        }
        throw .corrupt(.jpeg, "no image data")
    }

    private static func png(_ b: UnsafeRawBufferPointer) throws(ImageProbeError) -> ImageInfo {
        guard b.count >= 33, Array(b[12..<16]) == Array("IHDR".utf8) else { throw .corrupt(.png, "no IHDR header") }
        let width = be32(b, 16)
        let height = be32(b, 20)
        var i = 8
        while i + 12 <= b.count {
            let length = Int(be32(b, i))
            let type = Array(b[(i + 4)..<(i + 8)])
            guard length <= b.count, i + 12 + length <= b.count else {
                throw .corrupt(.png, "chunk runs past the end (truncated)")
            }
            if type == Array("IEND".utf8) { return try sized(.png, width, height) }
            i += 12 + length
        }
        throw .corrupt(.png, "no IEND chunk (truncated)")
    }

    private static func gif(_ b: UnsafeRawBufferPointer) throws(ImageProbeError) -> ImageInfo {
        guard b.count >= 14 else { throw .corrupt(.gif, "header is cut short") }
        guard b.last == 0x3B else { throw .corrupt(.gif, "no trailer byte (truncated)") }
        return try sized(.gif, le16(b, 6), le16(b, 8))
    }

    private static func webp(_ b: UnsafeRawBufferPointer) throws(ImageProbeError) -> ImageInfo {
        let riffSize = Int(le32(b, 4))
        guard riffSize + 8 <= b.count else { throw .corrupt(.webp, "RIFF size exceeds the file (truncated)") }
        guard b.count >= 30 else { throw .corrupt(.webp, "header is cut short") }
        let chunk = String(decoding: b[12..<16], as: UTF8.self)
        switch chunk {
        case "VP8 ":
            guard b[23] == 0x9D, b[24] == 0x01, b[25] == 0x2A else { throw .corrupt(.webp, "bad VP8 start code") }
            return try sized(.webp, le16(b, 26) & 0x3FFF, le16(b, 28) & 0x3FFF)
        case "VP8L":
            guard b[20] == 0x2F else { throw .corrupt(.webp, "bad VP8L signature") }
            let bits = le32(b, 21)
            return try sized(.webp, (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
        case "VP8X":
            return try sized(.webp, le24(b, 24) + 1, le24(b, 27) + 1)
        default:
            throw .corrupt(.webp, "unknown first chunk \(chunk)")
        }
    }

    private static let heifBrands: Set<String> = ["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1"]

    private static func heic(_ b: UnsafeRawBufferPointer) throws(ImageProbeError) -> ImageInfo {
        let ftypSize = Int(be32(b, 0))
        guard ftypSize >= 16, ftypSize <= b.count else { throw .unrecognised }
        var brands = [String(decoding: b[8..<12], as: UTF8.self)]
        var k = 16
        while k + 4 <= ftypSize {
            brands.append(String(decoding: b[k..<k + 4], as: UTF8.self))
            k += 4
        }
        guard brands.contains(where: heifBrands.contains) else { throw .unrecognised }
        // The pixel size is in an `ispe` property: meta (full box) / iprp / ipco / ispe. Take the largest,
        // since thumbnails carry their own.
        var best: (UInt32, UInt32)?
        func walk(_ start: Int, _ end: Int, depth: Int) {
            var i = start
            while i + 8 <= end, depth < 6 {
                var size = Int(be32(b, i))
                var header = 8
                if size == 1, i + 16 <= end {
                    size = Int(clamping: UInt64(be32(b, i + 8)) << 32 | UInt64(be32(b, i + 12)))
                    header = 16
                } else if size == 0 {
                    size = end - i
                }
                guard size >= header, i + size <= end else { return }
                let type = String(decoding: b[(i + 4)..<(i + 8)], as: UTF8.self)
                switch type {
                case "meta": walk(i + header + 4, i + size, depth: depth + 1)
                case "iprp", "ipco": walk(i + header, i + size, depth: depth + 1)
                case "ispe" where size >= header + 12:
                    let w = be32(b, i + header + 4)
                    let h = be32(b, i + header + 8)
                    if best.map({ UInt64($0.0) * UInt64($0.1) < UInt64(w) * UInt64(h) }) ?? true { best = (w, h) }
                default: break
                }
                i += size
            }
        }
        walk(0, b.count, depth: 0)
        guard let (width, height) = best else { throw .corrupt(.heic, "no image size (ispe) in the header") }
        return try sized(.heic, width, height)
    }

    private static func sized(
        _ type: MediaType,
        _ width: UInt32,
        _ height: UInt32
    ) throws(ImageProbeError)
        -> ImageInfo
    {
        guard (1...Limits.photoDimension).contains(width), (1...Limits.photoDimension).contains(height) else {
            throw .corrupt(type, "impossible pixel size \(width)x\(height)")
        }
        return ImageInfo(mediaType: type, width: width, height: height)
    }
}
