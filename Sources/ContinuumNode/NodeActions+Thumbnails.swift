import ContinuumCore
import Foundation

/// A new photo's thumbnail: made before its record is signed, so that the record commits to it (PROTOCOL.md §2.5)
/// and every receiver shows it as it is, then kept as this node's own once the record is stored.
extension NodeActions {
    /// The thumbnail that a new post or edit of the photo at `file` commits to. Nil on a node that keeps no
    /// thumbnails, and when libvips cannot make one of a photo it has just decoded whole: the record then commits to
    /// none, and each node makes its own, as for any record without one.
    func thumbnailToCommit(of file: URL) async -> Data? {
        guard thumbnails != nil else { return nil }
        do {
            return try await inspector.makeThumbnail(of: file)
        } catch {
            return nil
        }
    }

    /// Keeps the thumbnail the stored record commits to as this node's own; with none (or when it cannot be
    /// written), makes one from the photo, as for any record without one.
    func keepThumbnail(_ thumbnail: Data?, of photo: AssetHash) async {
        guard let thumbnails else { return }
        if let thumbnail {
            do {
                try await thumbnails.keepOwn(thumbnail, for: photo)
                return
            } catch {
                // Made from the photo below: peers then check this node's thumbnail whole, as an unsigned one.
            }
        }
        await makeThumbnail(of: photo)
    }

    func makeThumbnail(of photo: AssetHash) async {
        guard let thumbnails else { return }
        switch thumbnailing {
        case .beforeReturning:
            // While the photo is in the page cache. One that cannot be made now is made on first use by the
            // running node (or its photo is refused then), so the post stands either way.
            _ = try? await thumbnails.thumbnail(for: photo)
        case .inBackground:
            // The grid wants it next; a failure is retried on the grid's own request.
            Task { _ = try? await thumbnails.thumbnail(for: photo) }
        }
    }
}
