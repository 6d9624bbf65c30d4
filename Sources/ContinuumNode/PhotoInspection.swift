import ContinuumCore
import ContinuumMedia
import Foundation

/// Checks the photo of a new post. Throws ``PhotoRefusal`` for a file that is not an image, or is damaged.
public protocol PhotoInspecting: Sendable {
    func inspect(file: URL) async throws -> InspectedPhoto
    /// Writes `source` without its location metadata to `destination` and returns true, or returns false when it has
    /// none (then `destination` is untouched). Throws ``MediaError`` `.locationNotRemovable` when the location cannot
    /// be removed without re-encoding (``MetadataCleaner``).
    func removeLocation(from source: URL, to destination: URL) async throws -> Bool
    /// A thumbnail of the photo, for the record to commit to (PROTOCOL.md §2.5): a JPEG of at most 400 px a side,
    /// with no metadata.
    func makeThumbnail(of file: URL) async throws -> Data
}

/// What a photo file is: its header facts, and the defaults its metadata suggests for the post.
public struct InspectedPhoto: Sendable {
    public var info: ImageInfo
    public var takenAt: Timestamp?
    public var location: Coordinate?

    public init(info: ImageInfo, takenAt: Timestamp? = nil, location: Coordinate? = nil) {
        self.info = info
        self.takenAt = takenAt
        self.location = location
    }
}

/// Why a file is not accepted as a photo; the message says so for a person.
public enum PhotoRefusal: Error, Sendable {
    /// Not JPEG, PNG, HEIC, WebP or GIF.
    case notAnImage(String)
    /// Recognised, but its pixels cannot be decoded.
    case corrupt(String)
    /// Asked to share the position in the photo's EXIF, and it has none.
    case noLocation(String)
}

/// Makes (or finds) the thumbnail of a photo; nil when neither the photo nor a thumbnail is here yet.
public protocol ThumbnailProviding: Sendable {
    func thumbnail(for photo: AssetHash) async throws -> URL?
    /// Keeps `thumbnail` as this node's own thumbnail of the photo: the one its record commits to.
    func keepOwn(_ thumbnail: Data, for photo: AssetHash) async throws
}

extension ThumbnailService: ThumbnailProviding {}

/// Photos checked through libvips: the header (type and size), then every pixel decoded, and the EXIF date and
/// position as the post's defaults. Runs on the thumbnail service's thread, off the pool.
public struct MediaInspector: PhotoInspecting {
    let thumbnails: ThumbnailService

    public init(thumbnails: ThumbnailService) { self.thumbnails = thumbnails }

    public func inspect(file: URL) async throws -> InspectedPhoto {
        do {
            let (info, metadata) = try await thumbnails.inspect(file: file)
            return InspectedPhoto(
                info: info,
                takenAt: metadata.takenAt.map(Timestamp.init),
                location: metadata.location
            )
        } catch let error as MediaError {
            // Which refusal: not an image at all (the API's 415), or an image that is damaged (422).
            switch error.kind {
            case .notAnImage: throw PhotoRefusal.notAnImage(error.message)
            case .damaged: throw PhotoRefusal.corrupt(error.message)
            case .unreadable, .locationNotRemovable, .other: throw error
            }
        }
    }

    public func removeLocation(from source: URL, to destination: URL) async throws -> Bool {
        try await thumbnails.removeLocation(from: source, to: destination) != .nothingToRemove
    }

    public func makeThumbnail(of file: URL) async throws -> Data {
        try await thumbnails.makeThumbnail(of: file)
    }
}

extension InspectedPhoto {
    /// What a record says of this photo, stored as the bytes of SHA-256 `sha256` and size `bytes` (the file as it is
    /// kept, its location removed or not): what was read of it, when it was taken (`takenAt`, else its EXIF date),
    /// and the thumbnail the record commits to (PROTOCOL.md §2.5).
    func reference(sha256: AssetHash, bytes: UInt64, takenAt: Timestamp?, thumbnail: Data?) -> PhotoReference {
        PhotoReference(
            sha256: sha256,
            byteCount: bytes,
            mediaType: info.mediaType,
            width: info.width,
            height: info.height,
            takenAt: takenAt ?? self.takenAt,
            thumbnail: thumbnail.map(ThumbnailReference.init(of:))
        )
    }
}
