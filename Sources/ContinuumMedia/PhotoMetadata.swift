import ContinuumCore
import Foundation

/// What a photo's EXIF says about it, as far as a post uses it.
public struct PhotoMetadata: Sendable, Hashable {
    /// The EXIF orientation, 1 ... 8 (1: as stored; 6: turn 90° clockwise to view). 1 when the photo has none.
    public var orientation: Int
    /// When the photo was taken: EXIF `DateTimeOriginal`, in the time zone of `OffsetTimeOriginal` when the photo
    /// has one. Most cameras write no offset: then the local time is read as UTC, which can be off by the camera's
    /// time zone (a post's time is only for ordering and display). nil when absent or not a valid date.
    public var takenAt: Date?
    /// Where the photo was taken: EXIF GPS latitude and longitude (degrees, minutes, seconds as rationals) with
    /// their N/S and E/W references. nil when absent, incomplete or out of range.
    public var location: Coordinate?

    public init(orientation: Int = 1, takenAt: Date? = nil, location: Coordinate? = nil) {
        self.orientation = orientation
        self.takenAt = takenAt
        self.location = location
    }

    /// From libvips's metadata fields (`exif-ifd2-DateTimeOriginal`, …) as strings, with the type suffix removed.
    init(orientation: Int?, fields: (String) -> String?) {
        self.orientation = orientation.flatMap { (1...8).contains($0) ? $0 : nil } ?? 1
        takenAt = fields("exif-ifd2-DateTimeOriginal").flatMap {
            ExifText.date($0, offset: fields("exif-ifd2-OffsetTimeOriginal"))
        }
        location = ExifText.coordinate(
            latitude: fields("exif-ifd3-GPSLatitude"),
            latitudeRef: fields("exif-ifd3-GPSLatitudeRef"),
            longitude: fields("exif-ifd3-GPSLongitude"),
            longitudeRef: fields("exif-ifd3-GPSLongitudeRef")
        )
    }
}

/// Parses EXIF values as libvips shows them: `48/1 51/1 747/25 (48, 51, 29.88, Rational, 3 components, 24 bytes)`.
enum ExifText {
    /// The value without libvips's ` (readable, Type, n components, m bytes)` suffix.
    static func value(_ text: String) -> String {
        guard text.hasSuffix(" bytes)"), let open = text.range(of: " (", options: .backwards) else {
            return text.trimmingCharacters(in: .whitespaces)
        }
        // The readable part may itself hold " (": find the one that starts the suffix, the first whose contents
        // end with ", <Type>, n components, m bytes".
        var candidate = text.range(of: " (")
        while let range = candidate {
            let inner = text[range.upperBound...]
            if inner.range(of: #"^.*, [A-Za-z]+, \d+ components?, \d+ bytes?\)$"#, options: .regularExpression) != nil {
                return String(text[..<range.lowerBound]).trimmingCharacters(in: .whitespaces)
            }
            candidate = text.range(of: " (", range: range.upperBound..<text.endIndex)
        }
        return String(text[..<open.lowerBound]).trimmingCharacters(in: .whitespaces)
    }

    /// `2024:07:14 16:20:00` with an optional offset `+02:00`; nil when not a valid date.
    static func date(_ text: String, offset: String?) -> Date? {
        let parts = text.trimmingCharacters(in: .whitespaces).split(whereSeparator: { $0 == ":" || $0 == " " })
        guard parts.count == 6 else { return nil }
        let numbers = parts.compactMap { Int($0) }
        guard numbers.count == 6 else { return nil }
        let (year, month, day, hour, minute, second) =
            (numbers[0], numbers[1], numbers[2], numbers[3], numbers[4], numbers[5])
        guard (1...9999).contains(year), (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour),
            (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        var seconds = 0
        if let offset, let parsed = offsetSeconds(offset) { seconds = parsed }
        var calendar = Calendar(identifier: .gregorian)
        guard let zone = TimeZone(secondsFromGMT: seconds) else { return nil }
        calendar.timeZone = zone
        let components = DateComponents(
            year: year,
            month: month,
            day: day,
            hour: hour,
            minute: minute,
            second: second
        )
        guard calendar.date(from: components).map({ calendar.component(.day, from: $0) == day }) == true else {
            return nil
        }
        return calendar.date(from: components)
    }

    /// `+02:00`, `-05:30` → seconds east of UTC; nil otherwise.
    static func offsetSeconds(_ text: String) -> Int? {
        let text = text.trimmingCharacters(in: .whitespaces)
        guard text.count == 6, let sign = text.first, sign == "+" || sign == "-" else { return nil }
        let fields = text.dropFirst().split(separator: ":")
        guard fields.count == 2, let hours = Int(fields[0]), let minutes = Int(fields[1]), hours <= 14,
            minutes < 60
        else { return nil }
        return (sign == "-" ? -1 : 1) * (hours * 3600 + minutes * 60)
    }

    /// `48/1 51/1 747/25` → 48.8583 (degrees, minutes, seconds); nil when not three rationals.
    static func degrees(_ text: String) -> Double? {
        let rationals = text.split(separator: " ").map { part -> Double? in
            let fraction = part.split(separator: "/")
            guard fraction.count == 2, let numerator = Double(fraction[0]), let denominator = Double(fraction[1]),
                denominator != 0
            else { return nil }
            return numerator / denominator
        }
        guard rationals.count == 3, let d = rationals[0], let m = rationals[1], let s = rationals[2],
            d >= 0, (0..<60).contains(m), (0..<60).contains(s)
        else { return nil }
        return d + m / 60 + s / 3600
    }

    static func coordinate(
        latitude: String?,
        latitudeRef: String?,
        longitude: String?,
        longitudeRef: String?
    )
        -> Coordinate?
    {
        guard let latitude = latitude.flatMap(degrees), let longitude = longitude.flatMap(degrees),
            let latitudeRef = latitudeRef?.uppercased(), let longitudeRef = longitudeRef?.uppercased(),
            latitudeRef == "N" || latitudeRef == "S", longitudeRef == "E" || longitudeRef == "W"
        else { return nil }
        return Coordinate(
            latitude: latitudeRef == "S" ? -latitude : latitude,
            longitude: longitudeRef == "W" ? -longitude : longitude
        )
    }
}
