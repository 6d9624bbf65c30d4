import CVips
import ContinuumCore
import Foundation

/// Makes and checks thumbnails with libvips. Every function blocks; ``ThumbnailService`` runs them on its own
/// thread.
public enum Thumbnailer {
    /// The longest side of a thumbnail, in pixels.
    public static let maxSide = 400
    /// Our own thumbnails are smaller than this; the quality is lowered step by step until they are.
    public static let targetBytes = 50_000
    /// The largest thumbnail accepted from a peer (THUMB_DATA's limit, Docs/PROTOCOL.md §7.4).
    public static let maxPeerBytes = 64 * 1024
    /// The first bytes of every JPEG file (SOI, then a marker).
    static let jpegStart: [UInt8] = [0xFF, 0xD8, 0xFF]
    /// JPEG qualities tried in turn.
    static let qualities: [Int32] = [82, 72, 62, 52, 42, 32, 22]

    /// A thumbnail of a photo file: JPEG, longest side at most 400 px, EXIF orientation applied, no metadata at
    /// all (no EXIF, GPS, XMP, IPTC or ICC profile), under 50,000 bytes.
    ///
    /// Content in no format a post may hold is refused from its first bytes, before libvips opens it: libvips asks
    /// each of its loaders whether it reads the file, which for bytes that are no image took most of the CPU a
    /// receiver spent on a photo (its other loaders are blocked as well: ``Vips``).
    public static func make(from file: URL) throws(MediaError) -> Data {
        guard ImageProbe.format(ofSignature: try signature(of: file)) != nil else {
            throw MediaError(.notAnImage, "\(ImageProbeError.unrecognised)")
        }
        return try Vips.run { () throws(MediaError) -> Data in
            var image: UnsafeMutablePointer<VipsImage>?
            guard cvips_thumbnail_file(file.path, &image, Int32(maxSide)) == 0, let image else {
                throw Vips.failure("cannot make a thumbnail")
            }
            defer { cvips_unref(image) }
            return try encode(image)
        }
    }

    /// A thumbnail of a photo's bytes in memory (a small photo kept in the store), as ``make(from:)`` makes one of a
    /// file, with no file written for libvips to read: on this machine's disk a new file costs more than a small
    /// photo's whole thumbnail.
    public static func make(fromBytes bytes: [UInt8]) throws(MediaError) -> Data {
        guard ImageProbe.format(ofSignature: bytes.prefix(ImageProbe.signatureLength)) != nil else {
            throw MediaError(.notAnImage, "\(ImageProbeError.unrecognised)")
        }
        var copy = bytes
        return try copy.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) -> Result<Data, MediaError> in
            Result { () throws(MediaError) -> Data in
                try Vips.run { () throws(MediaError) -> Data in
                    // libvips reads the buffer while the image is decoded below, within this closure.
                    var image: UnsafeMutablePointer<VipsImage>?
                    guard cvips_thumbnail_buffer(buffer.baseAddress, buffer.count, &image, Int32(maxSide)) == 0,
                        let image
                    else { throw Vips.failure("cannot make a thumbnail") }
                    defer { cvips_unref(image) }
                    return try encode(image)
                }
            }
        }.get()
    }

    /// A thumbnail image (from `cvips_thumbnail_file` or `_buffer`) as a small JPEG; within ``Vips/run(_:)``.
    private static func encode(_ image: UnsafeMutablePointer<VipsImage>) throws(MediaError) -> Data {
        // Decode once into memory: the loader reads sequentially, and each quality tried encodes again.
        guard let decoded = vips_image_copy_memory(image) else { throw Vips.failure("cannot make a thumbnail") }
        defer { cvips_unref(decoded) }
        return try smallJPEG(decoded)
    }

    /// The first ``ImageProbe/signatureLength`` bytes of a file (fewer when it is shorter).
    static func signature(of file: URL) throws(MediaError) -> [UInt8] {
        do {
            let handle = try FileHandle(forReadingFrom: file)
            // Only read: closing cannot lose anything.
            defer { try? handle.close() }
            return [UInt8](try handle.read(upToCount: ImageProbe.signatureLength) ?? Data())
        } catch {
            throw MediaError(.unreadable, "cannot read \(file.path): \(error.localizedDescription)")
        }
    }

    /// Checks a thumbnail a peer sent and re-encodes it: it must be a JPEG that decodes completely, at most 64 KiB
    /// and 400 px on its longest side. The result has no metadata (a peer's bytes could carry GPS).
    public static func accept(peerThumbnail bytes: [UInt8]) throws(MediaError) -> Data {
        guard bytes.count <= maxPeerBytes else {
            throw MediaError("the thumbnail is \(bytes.count) bytes; the limit is \(maxPeerBytes)")
        }
        guard bytes.starts(with: jpegStart) else { throw MediaError("the thumbnail is not a JPEG") }
        return try bytes.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Result<Data, MediaError> in
            Result { () throws(MediaError) -> Data in
                try Vips.run { () throws(MediaError) -> Data in
                    guard let image = cvips_open_buffer(buffer.baseAddress, buffer.count) else {
                        throw Vips.failure("the thumbnail cannot be read")
                    }
                    defer { cvips_unref(image) }
                    guard let loader = cvips_loader(image).map({ String(cString: $0) }), loader.hasPrefix("jpegload")
                    else { throw MediaError("the thumbnail is not a JPEG") }
                    let (width, height) = (Int(image.pointee.Xsize), Int(image.pointee.Ysize))
                    guard width <= maxSide, height <= maxSide else {
                        throw MediaError("the thumbnail is \(width)×\(height); the limit is \(maxSide) px a side")
                    }
                    // Encoding reads every pixel: a damaged JPEG fails here (fail_on error).
                    var output: UnsafeMutableRawPointer?
                    var length = 0
                    guard cvips_jpegsave_buffer(image, &output, &length, 82) == 0, let output else {
                        throw Vips.failure("the thumbnail is damaged")
                    }
                    defer { g_free(output) }
                    let data = Data(bytes: output, count: length)
                    guard data.count <= maxPeerBytes else {
                        throw MediaError("the thumbnail is too large once re-encoded (\(data.count) bytes)")
                    }
                    return data
                }
            }
        }.get()
    }

    /// The width and height that a JPEG's frame header (its SOF segment) declares, read without decoding anything;
    /// nil when no frame header comes before the end of the bytes or the start of the scan.
    public static func frameSize(ofJPEG bytes: [UInt8]) -> (width: Int, height: Int)? {
        guard bytes.starts(with: [0xFF, 0xD8]) else { return nil }
        var index = 2
        while index + 4 <= bytes.count {
            guard bytes[index] == 0xFF else { return nil }
            let marker = bytes[index + 1]
            // Fill bytes, and markers that stand alone (no length).
            if marker == 0xFF {
                index += 1
                continue
            }
            if marker == 0x01 || (0xD0...0xD7).contains(marker) {
                index += 2
                continue
            }
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            guard length >= 2 else { return nil }
            // SOF0 … SOF15, but DHT (C4), JPG (C8) and DAC (CC): precision, height, width.
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                guard length >= 7, index + 9 <= bytes.count else { return nil }
                let height = Int(bytes[index + 5]) << 8 | Int(bytes[index + 6])
                let width = Int(bytes[index + 7]) << 8 | Int(bytes[index + 8])
                return (width, height)
            }
            // The scan starts: no frame header came before it.
            if marker == 0xDA { return nil }
            index += 2 + length
        }
        return nil
    }

    /// The width and height of a JPEG's pixels, and whether it carries any metadata field (EXIF, XMP, IPTC, ICC);
    /// for tests and checks.
    public static func describe(jpeg: Data) throws(MediaError) -> (width: Int, height: Int, metadata: [String]) {
        try jpeg.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Result<(Int, Int, [String]), MediaError> in
            Result { () throws(MediaError) -> (Int, Int, [String]) in
                try Vips.run { () throws(MediaError) -> (Int, Int, [String]) in
                    guard let image = cvips_open_buffer(buffer.baseAddress, buffer.count) else {
                        throw Vips.failure("cannot read the JPEG")
                    }
                    defer { cvips_unref(image) }
                    var names: [String] = []
                    if let fields = vips_image_get_fields(image) {
                        defer { g_strfreev(fields) }
                        var index = 0
                        while let field = fields[index] {
                            let name = String(cString: field)
                            if name.hasPrefix("exif-") || name.hasPrefix("xmp-") || name.hasPrefix("iptc-")
                                || name.hasPrefix("icc-") || name == "orientation"
                            {
                                names.append(name)
                            }
                            index += 1
                        }
                    }
                    return (Int(image.pointee.Xsize), Int(image.pointee.Ysize), names)
                }
            }
        }.get()
    }

    /// Saves as JPEG with metadata stripped, lowering the quality until it is under ``targetBytes``.
    private static func smallJPEG(_ image: UnsafeMutablePointer<VipsImage>) throws(MediaError) -> Data {
        var last = Data()
        for quality in qualities {
            var output: UnsafeMutableRawPointer?
            var length = 0
            guard cvips_jpegsave_buffer(image, &output, &length, quality) == 0, let output else {
                throw Vips.failure("cannot encode the thumbnail")
            }
            last = Data(bytes: output, count: length)
            g_free(output)
            if last.count < targetBytes { return last }
        }
        throw MediaError("the thumbnail is still \(last.count) bytes at quality \(qualities.last ?? 0)")
    }
}
