import ContinuumCore
import ContinuumMedia
import Foundation

extension ThumbnailService: ThumbnailProviding {}

/// Uploads checked as `post` checks a file: the header (type and size), then every pixel decoded through libvips,
/// and the EXIF date and position as the post's defaults. Runs on the thumbnail service's thread, off the pool.
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
            // Which refusal: not an image at all (415), or an image that is damaged (422).
            switch error.kind {
            case .notAnImage: throw PhotoRefusal.notAnImage(error.message)
            case .damaged: throw PhotoRefusal.corrupt(error.message)
            case .unreadable, .other: throw error
            }
        }
    }
}
