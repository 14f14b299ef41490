//! [`InputOptions`]: how an input stream is created.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use punctual_core::{EventShape, Order, Ordered, Unordered};
use punctual_policies::{AdvanceTimeSettings, Watermark, DEFAULT_MAX_BUFFERED};

/// How an input stream is created: its name, shape, advance-time settings (or watermark
/// strategy), buffer cap, and order (`O`: [`Ordered`] by default, [`Unordered`] after
/// [`InputOptions::unordered`]).
///
/// ```
/// use punctual_core::{EventShape, TimeSpan};
/// use punctual_engine::InputOptions;
/// use punctual_policies::AdvanceTimeSettings;
/// let options = InputOptions::new("readings", EventShape::Point)
///     .settings(AdvanceTimeSettings::unordered_start_time(TimeSpan::from_secs(2)))
///     .max_buffered(100_000)
///     .unordered(); // events go on in arrival order: for windows, filters, the join's left side
/// assert_eq!(options.name(), "readings");
/// ```
pub struct InputOptions<O = Ordered> {
    pub(crate) name: String,
    pub(crate) shape: EventShape,
    pub(crate) settings: Option<AdvanceTimeSettings>,
    pub(crate) watermark: Option<Arc<dyn Any + Send + Sync>>,
    /// An `EdgeKey<P>` for the stream's payload type.
    pub(crate) edge_key: Option<Arc<dyn Any + Send + Sync>>,
    pub(crate) max_buffered: usize,
    pub(crate) reference: bool,
    _order: PhantomData<fn() -> O>,
}

impl<O> Clone for InputOptions<O> {
    fn clone(&self) -> Self {
        InputOptions {
            name: self.name.clone(),
            shape: self.shape,
            settings: self.settings.clone(),
            watermark: self.watermark.clone(),
            edge_key: self.edge_key.clone(),
            max_buffered: self.max_buffered,
            reference: self.reference,
            _order: PhantomData,
        }
    }
}

impl<O: Order> std::fmt::Debug for InputOptions<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputOptions")
            .field("name", &self.name)
            .field("shape", &self.shape)
            .field("settings", &self.settings)
            .field("watermark", &self.watermark.is_some())
            .field("max_buffered", &self.max_buffered)
            .field("reference", &self.reference)
            .field("order", &O::ORDER)
            .finish()
    }
}

impl InputOptions<Ordered> {
    /// An ordered stream with this name and shape; defaults: no settings of its own (an
    /// adapter factory's declared settings apply, if any), a buffer cap of
    /// [`DEFAULT_MAX_BUFFERED`] events.
    pub fn new(name: impl Into<String>, shape: EventShape) -> Self {
        InputOptions {
            name: name.into(),
            shape,
            settings: None,
            watermark: None,
            edge_key: None,
            max_buffered: DEFAULT_MAX_BUFFERED,
            reference: false,
            _order: PhantomData,
        }
    }

    /// Makes the stream unordered: its ingress releases each accepted point or interval at
    /// once, in arrival order, instead of holding it sorted until a CTI passes it; the CTIs,
    /// policies and counters are the same. Only order-insensitive operators take the stream
    /// (see [`punctual_core::order`]): filter, map, hopping and tumbling windows, the join's
    /// left side, and `ordered()`, which sorts it back. A stream of the edge shape cannot be
    /// unordered (an end edge can still change its start edge, which must wait for its CTI):
    /// the plan refuses it.
    pub fn unordered(self) -> InputOptions<Unordered> {
        InputOptions {
            name: self.name,
            shape: self.shape,
            settings: self.settings,
            watermark: self.watermark,
            edge_key: self.edge_key,
            max_buffered: self.max_buffered,
            reference: self.reference,
            _order: PhantomData,
        }
    }
}

impl<O: Order> InputOptions<O> {
    /// The stream's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The stream's shape.
    pub fn shape(&self) -> EventShape {
        self.shape
    }

    /// The settings given with [`InputOptions::settings`], if any.
    pub fn given_settings(&self) -> Option<&AdvanceTimeSettings> {
        self.settings.as_ref()
    }

    /// Advance-time settings for this stream; they replace an adapter factory's declared
    /// settings entirely.
    pub fn settings(mut self, settings: AdvanceTimeSettings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// A watermark strategy for this stream's CTIs (instead of generation settings; the policy
    /// of `settings`, if given, handles events that still break a CTI, else `Drop`). Its payload
    /// type must be the stream's. Idle inputs and periodic emission need clock readings
    /// ([`Driver::tick`](crate::Driver::tick)).
    pub fn watermark<P: Send + Sync + 'static>(mut self, watermark: Watermark<P>) -> Self {
        self.watermark = Some(Arc::new(watermark));
        self
    }

    /// Matches the stream's end edges to their start edges by `key` as well as by start time
    /// (equal payloads must have equal keys; an id is a good key): a lookup instead of a scan
    /// of the open edges that share a start, for streams with many edges at one start time (a
    /// snapshot of reference data valid from the same moment). Its payload type must be the
    /// stream's.
    pub fn edge_key<P: 'static>(mut self, key: impl Fn(&P) -> u64 + Send + Sync + 'static) -> Self {
        let key: punctual_policies::EdgeKey<P> = Arc::new(key);
        self.edge_key = Some(Arc::new(key));
        self
    }

    /// How many events the reorder buffer may hold before the next one is rejected with a
    /// clear error (instead of growing without bound when no CTI comes).
    pub fn max_buffered(mut self, n: usize) -> Self {
        self.max_buffered = n;
        self
    }

    /// Marks the stream as reference data: slow data (calibrations, a price list) that a fast
    /// stream is looked up in, and that imports the fast stream's CTIs. Its input keeps its
    /// own end: while its adapter runs, the final `CTI(+inf)` of a stream it imports from is
    /// held back (what it imported before still applies), and issued when its own input
    /// ends, so reference data that comes after the fast stream has ended is still taken.
    /// The runtime also starts the query's other inputs only once every reference input is
    /// ready (it has enqueued its initial snapshot: see the adapters' `InputContext::ready`).
    ///
    /// ```
    /// use punctual_core::EventShape;
    /// use punctual_engine::InputOptions;
    /// let options = InputOptions::new("calibrations", EventShape::Edge).reference();
    /// assert!(options.is_reference());
    /// ```
    pub fn reference(mut self) -> Self {
        self.reference = true;
        self
    }

    /// Whether the stream is reference data ([`InputOptions::reference`]).
    pub fn is_reference(&self) -> bool {
        self.reference
    }
}
