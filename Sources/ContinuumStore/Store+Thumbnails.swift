import ContinuumCore
import Foundation
import GRDB

/// The author's thumbnails that posts sign (PROTOCOL.md §2.5, §7.4.19).
extension ContinuumStore {
    /// The thumbnails that the live posts showing a photo commit to (PROTOCOL.md §2.5): a peer's thumbnail with one
    /// of these hashes is the author's, kept as it is (§7.4.19). Empty when no live post commits to one.
    public func committedThumbnails(of photo: AssetHash) async throws -> Set<AssetHash> {
        try await read { db in
            let hashes = try Data.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT thumb_sha256 FROM post
                        WHERE photo_sha256 = ? AND deleted = 0 AND thumb_sha256 IS NOT NULL
                        """
                ),
                arguments: [photo.bytes]
            )
            return Set(hashes.compactMap(AssetHash.init(bytes:)))
        }
    }
}

extension Ingest {
    /// Notes a photo whose live posts now sign two different thumbnails (a second post of the same photo, or an
    /// edit that put it in): a thumbnail kept as signed may be another author's, so its files go after the commit
    /// (``IngestReport/contestedThumbnails``) and the photo is shown by a thumbnail made from the photo itself.
    mutating func noteThumbnailContest(of photo: PhotoReference) throws {
        guard photo.thumbnail != nil else { return }
        let distinct = try Int.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT count(DISTINCT thumb_sha256) FROM post
                    WHERE photo_sha256 = ? AND deleted = 0 AND thumb_sha256 IS NOT NULL
                    """
            ),
            arguments: [photo.sha256.bytes]
        )
        if (distinct ?? 0) > 1 { contestedThumbnails.insert(photo.sha256) }
    }
}
