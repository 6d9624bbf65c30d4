import ContinuumCore

/// One entry of PHOTOS (PROTOCOL.md §7.4.27): a small photo asked for with PHOTOS_WANT, whole, or nil bytes when the
/// sender does not give it (it does not have it, or it is not small, or not shown to the asker).
public struct SmallPhoto: Hashable, Sendable {
    public var hash: AssetHash
    public var bytes: [UInt8]?

    public init(hash: AssetHash, bytes: [UInt8]?) {
        self.hash = hash
        self.bytes = bytes
    }
}

extension WireLimits {
    /// The largest photo that travels whole in PHOTOS, and that a receiver keeps in its store rather than as a file:
    /// 64 KiB, a thumbnail's limit.
    public static let smallPhotoBytes = 64 * 1024
    /// The most photos a PHOTOS_WANT asks for, and a PHOTOS carries.
    public static let maxPhotosPerBatch = 64
    /// The photo bytes a node puts in one PHOTOS at most (more go in the next): well inside a frame's 4 MiB.
    public static let photosFrameBytes = 1024 * 1024
}

// PHOTOS_WANT (PROTOCOL.md §7.4.26): `u8` count (1 … 64), then that many distinct photo hashes.
// PHOTOS (§7.4.27): `u8` count (1 … 64), then per entry its hash (distinct), `u32` length (0: not given; 1 … 65536:
// the photo's bytes follow).
extension WireCodec {
    /// The payload of a message of the optional range that this version defines (FOLLOWS, PHOTOS_WANT, PHOTOS).
    static func writeOptionalKind(_ message: WireMessage, to writer: inout WireWriter) {
        switch message {
        case .follows(let entries): writeFollows(entries, to: &writer)
        case .photosWant(let hashes): writePhotosWant(hashes, to: &writer)
        case .photos(let photos): writePhotos(photos, to: &writer)
        default: preconditionFailure("\(message.typeName) is not an optional type this version defines")
        }
    }

    static func writePhotosWant(_ hashes: [AssetHash], to writer: inout WireWriter) {
        writer.u8(UInt8(hashes.count))
        for hash in hashes { writer.raw(hash.bytes) }
    }

    static func writePhotos(_ photos: [SmallPhoto], to writer: inout WireWriter) {
        writer.u8(UInt8(photos.count))
        for photo in photos {
            writer.raw(photo.hash.bytes)
            writer.u32(UInt32(photo.bytes?.count ?? 0))
            if let bytes = photo.bytes { writer.raw(bytes) }
        }
    }

    static func readPhotosWant(_ reader: inout WireReader) throws(WireError) -> [AssetHash] {
        let count = Int(try reader.u8("photo count"))
        try checkPhotoCount(count, reader)
        var hashes: [AssetHash] = []
        hashes.reserveCapacity(count)
        for _ in 0..<count { hashes.append(try reader.id("hash")) }
        try checkDistinct(hashes, reader)
        return hashes
    }

    static func readPhotos(_ reader: inout WireReader) throws(WireError) -> [SmallPhoto] {
        let count = Int(try reader.u8("photo count"))
        try checkPhotoCount(count, reader)
        var photos: [SmallPhoto] = []
        photos.reserveCapacity(count)
        for _ in 0..<count {
            let hash: AssetHash = try reader.id("hash")
            let length = Int(try reader.u32("photo length"))
            guard length <= WireLimits.smallPhotoBytes else {
                throw reader.malformed("a photo of \(length) bytes; the limit is \(WireLimits.smallPhotoBytes)")
            }
            photos.append(SmallPhoto(hash: hash, bytes: length == 0 ? nil : Array(try reader.raw(length, "photo"))))
        }
        try checkDistinct(photos.map(\.hash), reader)
        return photos
    }

    static func checkPhotosWant(_ hashes: [AssetHash], _ reader: WireReader) throws(WireError) {
        try checkPhotoCount(hashes.count, reader)
        try checkDistinct(hashes, reader)
    }

    static func checkPhotos(_ photos: [SmallPhoto], _ reader: WireReader) throws(WireError) {
        try checkPhotoCount(photos.count, reader)
        try checkDistinct(photos.map(\.hash), reader)
        for photo in photos {
            guard let bytes = photo.bytes else { continue }
            guard (1...WireLimits.smallPhotoBytes).contains(bytes.count) else {
                throw reader.malformed("a photo of \(bytes.count) bytes; a PHOTOS entry carries 1 ... 65536")
            }
        }
        let total = photos.reduce(0) { $0 + 36 + ($1.bytes?.count ?? 0) }
        guard total + 1 <= WireLimits.maxFrameBytes - headerBytes else {
            throw reader.malformed("the photos are \(total) bytes, over a frame's limit")
        }
    }

    private static func checkPhotoCount(_ count: Int, _ reader: WireReader) throws(WireError) {
        guard (1...WireLimits.maxPhotosPerBatch).contains(count) else {
            throw reader.malformed("\(count) photos; 1 ... \(WireLimits.maxPhotosPerBatch) are allowed")
        }
    }

    private static func checkDistinct(_ hashes: [AssetHash], _ reader: WireReader) throws(WireError) {
        guard Set(hashes).count == hashes.count else { throw reader.malformed("a photo is named twice") }
    }
}
