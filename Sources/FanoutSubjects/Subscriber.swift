/// What the subject index needs of a member: a scratch mark to count it once per publish.
public protocol Subscriber: AnyObject {
    /// Set by `SubjectIndex.forEachReceiver` to the publish's mark; a member already carrying the mark is
    /// not visited again, which gives set semantics without a per-publish hash set.
    var deliveryMark: UInt64 { get set }
}
