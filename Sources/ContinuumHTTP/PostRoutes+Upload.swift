import ContinuumCore
import ContinuumNode
import ContinuumStore
import Foundation
import Hummingbird

/// The writes of posts that carry a photo, a new post and a new photo for a post: uploads (``UploadReceiver``).
extension PostRoutes {
    /// `POST /api/posts`: a `multipart/form-data` upload. The photo part is streamed to a temporary file with a
    /// running SHA-256, never held whole in memory; the fields are checked before the photo is decoded, and the
    /// photo before the post is signed (``NodeActions/post(_:by:)``).
    func createPost(_ request: Request, context: BasicRequestContext) async throws -> Response {
        try await uploads.receive(
            request,
            describing: "the photo as multipart/form-data with fields photo, caption and optionally location",
            photoMissing: "choose a photo to share (field 'photo')"
        ) { upload, photo in
            var draft = try Self.newPost(upload, photo: photo)
            let group = upload.fields["group"].flatMap { $0.isEmpty ? nil : $0 }
            // No group given: the node's only group, or none (the post stays here); with several, one is needed.
            let groups = try await store.groups()
            if group == nil, groups.count > 1 {
                throw APIError(
                    .badRequest,
                    "missing_group",
                    "this node is in \(groups.count) groups; choose one with the field group: "
                        + groups.map { "\($0.name ?? "?") (\($0.id.short))" }.joined(separator: ", "),
                    field: "group"
                )
            }
            if let group {
                draft.group = try await storeCall(noun: "group", field: "group") {
                    try await GroupChoice.resolve(group, in: store)
                }
            }
            let id = try await UploadReceiver.refusingBadPhotos(upload) {
                try await withInvalidText(field: "caption") {
                    try await actions.post(draft, by: identity)
                }
            }
            var response = try json(try await postView(id), status: .created)
            response.headers[.location] = "/api/posts/\(id.hex)"
            return response
        }
    }

    /// `PUT /api/posts/{id}/photo`: a `multipart/form-data` upload of a new photo for one of this node's posts,
    /// with `takenAt` and `keepMetadata` as for a new post, and optionally a new `caption` and `location` (`LAT,LON`;
    /// empty: removed), so that one save changes them all. One Edit record, so one notification for a follower; the
    /// replaced photo is erased here and on every peer unless another live post shows it.
    func replacePhoto(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let id = try await resolvePost(context, in: store)
        return try await uploads.receive(
            request,
            describing: "the new photo as multipart/form-data with a field photo",
            photoMissing: "choose the new photo (field 'photo')"
        ) { upload, photo in
            let edit = PostEdit(
                caption: try upload.newCaption(),
                photo: .upload(photo.url, sha256: photo.hash, bytes: photo.bytes),
                takenAt: try upload.takenAt(),
                location: try upload.locationChange(),
                keepMetadata: try upload.flag("keepMetadata", default: false)
            )
            _ = try await withInvalidText(field: "caption") {
                try await UploadReceiver.refusingBadPhotos(upload) { try await actions.edit(id, edit, by: identity) }
            }
            return try json(try await postView(id))
        }
    }

    /// The post the upload's fields describe: `caption` (required), `location`, `takenAt`, `autoFollow`,
    /// `locationFromPhoto`, `keepMetadata` (and `group`, resolved by the caller).
    static func newPost(_ upload: UploadState, photo: UploadState.Photo) throws -> NewPost {
        guard let caption = upload.fields["caption"], !TextRules.isBlank(caption) else {
            throw APIError(.badRequest, "missing_caption", "write a caption for the photo", field: "caption")
        }
        var location: Coordinate?
        if let text = upload.fields["location"], !text.trimmingCharacters(in: .whitespaces).isEmpty {
            location = try coordinate(text, field: "location")
            if try upload.flag("locationFromPhoto", default: false) {
                throw APIError.badRequest("give either location or locationFromPhoto, not both", field: "location")
            }
        }
        let takenAt = try upload.takenAt()
        return NewPost(
            photo: .upload(photo.url, sha256: photo.hash, bytes: photo.bytes),
            caption: caption,
            location: location,
            takenAt: takenAt,
            autoFollow: upload.fields["autoFollow"].map { $0 != "false" && $0 != "0" } ?? true,
            locationFromPhoto: try upload.flag("locationFromPhoto", default: false),
            keepMetadata: try upload.flag("keepMetadata", default: false)
        )
    }

}

/// The fields of an edit sent with its new photo (`PUT /api/posts/{id}/photo`).
extension UploadState {
    /// The `caption` field: nil when absent (unchanged); blank is refused.
    fileprivate func newCaption() throws -> String? {
        guard let caption = fields["caption"] else { return nil }
        if TextRules.isBlank(caption) {
            throw APIError(.badRequest, "missing_caption", "the new caption is blank; write one", field: "caption")
        }
        return caption
    }

    /// The `location` field: absent, unchanged; empty, removed; else `LAT,LON`.
    fileprivate func locationChange() throws -> PostChange.Location {
        guard let text = fields["location"]?.trimmingCharacters(in: .whitespaces) else { return .unchanged }
        return text.isEmpty ? .removed : .set(try coordinate(text, field: "location"))
    }
}
