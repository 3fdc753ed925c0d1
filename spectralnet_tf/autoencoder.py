"""The VaDE autoencoder (784-500-500-2000-10) that gives SpectralNet its code space
(paper Sec. 3.4), and its HDF5 weight files.

Weight file layout (Keras 1 ``save_weights``, as in the public VaDE files, and as
``scripts/pretrain_ae.py`` writes): a top-level attribute ``layer_names``; one
group per layer with an attribute ``weight_names``; the weights as datasets
(kernel ``(in, out)``, then bias) under the names listed. Layers without weights
(the input layer) have an empty ``weight_names``. The 8 layers with weights are
taken in file order as encoder1..encoder4, decoder1..decoder4.
"""

import os

import h5py
import keras
import numpy as np
import tensorflow as tf

from . import distribute
from .losses import nt_xent
from .callbacks import Checkpoint, ProgressBar, Training, run_epochs
from .views import translate

ENCODER_NAMES = ("encoder1", "encoder2", "encoder3", "encoder4")
DECODER_NAMES = ("decoder1", "decoder2", "decoder3", "decoder4")


def build_autoencoder(input_dim=784, hidden=(500, 500, 2000), code_dim=10,
                      output_activation="sigmoid", seed=0):
    """Return ``(autoencoder, encoder)``: ReLU layers, a linear code, a mirrored
    decoder ending in ``output_activation`` (sigmoid for pixels in [0, 1])."""
    sizes = (*hidden, code_dim)
    init = keras.initializers.GlorotUniform
    enc_layers = [
        keras.layers.Dense(units, activation="relu" if i < len(sizes) - 1 else None,
                           kernel_initializer=init(seed=seed + i), name=ENCODER_NAMES[i])
        for i, units in enumerate(sizes)
    ]
    dec_sizes = (*hidden[::-1], input_dim)
    dec_layers = [
        keras.layers.Dense(units, activation="relu" if i < len(dec_sizes) - 1 else output_activation,
                           kernel_initializer=init(seed=seed + 10 + i), name=DECODER_NAMES[i])
        for i, units in enumerate(dec_sizes)
    ]
    x = keras.Input((input_dim,), name="x")
    h = x
    for layer in enc_layers:
        h = layer(h)
    code = h
    for layer in dec_layers:
        h = layer(h)
    autoencoder = keras.Model(x, h, name="autoencoder")
    encoder = keras.Model(x, code, name="encoder")
    return autoencoder, encoder


def _dense_layers(autoencoder):
    return [autoencoder.get_layer(n) for n in (*ENCODER_NAMES, *DECODER_NAMES)]


def save_ae_weights(autoencoder, path):
    """Write the autoencoder's weights in the Keras 1 layout (atomically)."""
    from .atomic import atomic_file

    with atomic_file(path, "wb") as f:
        with h5py.File(f, "w") as h5:
            names = [layer.name for layer in _dense_layers(autoencoder)]
            h5.attrs["layer_names"] = np.array([n.encode() for n in names])
            for layer in _dense_layers(autoencoder):
                group = h5.create_group(layer.name)
                weight_names = [f"{layer.name}_W", f"{layer.name}_b"]
                group.attrs["weight_names"] = np.array([w.encode() for w in weight_names])
                for wname, value in zip(weight_names, layer.get_weights()):
                    group.create_dataset(wname, data=value.astype(np.float32))


def _decode(names):
    return [n.decode() if isinstance(n, bytes) else str(n) for n in names]


def read_ae_weights(path):
    """[(kernel, bias)] of the layers with weights, in file order."""
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"Autoencoder weight file {path!r} does not exist. Expected an HDF5 file "
            "in the Keras 1 layout (e.g. pretrained_ae/ae_mnist_weights.h5 or VaDE's "
            "ae_mnist_weights.h5); scripts/pretrain_ae.py writes one."
        )
    try:
        h5 = h5py.File(path, "r")
    except OSError as err:
        raise ValueError(f"Autoencoder weight file {path!r} is not a readable HDF5 file: {err}") from err
    with h5:
        if "layer_names" not in h5.attrs:
            raise ValueError(
                f"Autoencoder weight file {path!r} has no top-level 'layer_names' "
                "attribute; expected the Keras 1 save_weights layout (layer_names, "
                "one group per layer with 'weight_names')."
            )
        weights = []
        for name in _decode(h5.attrs["layer_names"]):
            if name not in h5:
                raise ValueError(
                    f"Autoencoder weight file {path!r} lists layer {name!r} in "
                    "'layer_names' but has no group of that name."
                )
            group = h5[name]
            wnames = _decode(group.attrs.get("weight_names", []))
            if not wnames:
                continue
            if len(wnames) != 2:
                raise ValueError(
                    f"Layer {name!r} in {path!r} has weights {wnames}; expected a Dense "
                    "kernel and bias."
                )
            weights.append(tuple(np.asarray(group[w], dtype=np.float32) for w in wnames))
    return weights


def load_ae_weights(autoencoder, path):
    """Set the autoencoder's weights from ``path``; shapes must match exactly."""
    weights = read_ae_weights(path)
    layers = _dense_layers(autoencoder)
    expected = [tuple(w.shape for w in layer.get_weights()) for layer in layers]
    found = [(k.shape, b.shape) for k, b in weights]
    if found != expected:
        raise ValueError(
            f"Autoencoder weight file {path!r} holds layers with shapes {found}; "
            f"expected {expected} (encoder1..4, decoder1..4)."
        )
    for layer, (kernel, bias) in zip(layers, weights):
        layer.set_weights([kernel, bias])
    return autoencoder


def architecture(weights):
    """``input_dim, hidden, code_dim`` of an autoencoder from its (kernel, bias) list."""
    kernels = [k for k, _ in weights]
    return kernels[0].shape[0], tuple(k.shape[1] for k in kernels[:3]), kernels[3].shape[1]


def load_encoder(path):
    """The encoder of the autoencoder in ``path``; its layer sizes are read from
    the file (784-500-500-2000-10 for MNIST, 2000-500-500-2000-10 for Reuters)."""
    weights = read_ae_weights(path)
    if len(weights) != 2 * len(ENCODER_NAMES):
        raise ValueError(
            f"Autoencoder weight file {path!r} holds {len(weights)} layers with weights; "
            f"expected {2 * len(ENCODER_NAMES)} (encoder1..4, decoder1..4)."
        )
    input_dim, hidden, code_dim = architecture(weights)
    autoencoder, encoder = build_autoencoder(input_dim, hidden, code_dim)
    load_ae_weights(autoencoder, path)
    return encoder


def translate_images(batch, max_shift, generator, image_shape):
    """Augmentation for images stored as flat rows: move each image by its own
    random offset, uniform in [-max_shift, max_shift] pixels along each axis
    (``views.translate``: bilinear, zero fill). A batch of shape (n, pixels, c)
    holds c images per row, all moved by the row's offset."""
    offset = generator.uniform([tf.shape(batch)[0], 2], -max_shift, max_shift)
    return translate(batch, offset, image_shape)


def _check_image_shape(x, max_shift, image_shape):
    """Shifts move images: with ``max_shift`` the rows of x must be images of
    ``image_shape``."""
    if max_shift and (image_shape is None or int(np.prod(image_shape)) != np.shape(x)[1]):
        raise ValueError(
            f"max_shift needs the image_shape of x's rows ({np.shape(x)[1]} values each), "
            f"got image_shape={image_shape!r}."
        )


def _deformed(deform, x, epoch):
    """``deform(x, epoch)`` as float32, checked to keep x's shape."""
    deformed = np.asarray(deform(x, epoch), dtype=np.float32)
    if deformed.shape != x.shape:
        raise ValueError(f"deform must return an array of x's shape {x.shape}, got "
                         f"shape {deformed.shape} for epoch={epoch}.")
    return deformed


def equal_invariance_weight(autoencoder, x, deform, *, batch_size=256, max_shift=0.0,
                            image_shape=None, temperature=0.5, batches=8, seed=0):
    """The invariance weight that makes the two loss terms equal at the start:
    ``W = MSE / NT-Xent``, each the mean over ``batches`` random batches of x
    as ``train_autoencoder``'s first epoch would see them (moved by
    ``max_shift`` if set, each second view ``deform(x, 0)``'s row, moved by
    its own offset), at the autoencoder's present weights.

    Equal terms at initialisation is a rule that fixes the weight without
    labels: neither term starts out drowning the other, so the codes keep
    what reconstruction taught them while the invariance term begins to act.
    Returns ``(W, mse, nt_xent)``."""
    x = np.asarray(x, dtype=np.float32)
    for name, value in (("batches", batches), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {name}={value!r}.")
    _check_image_shape(x, max_shift, image_shape)
    views = _deformed(deform, x, 0)
    rng = np.random.default_rng(seed)
    generator = tf.random.Generator.from_seed(seed)
    layers = _dense_layers(autoencoder)
    squared, contrast = [], []
    for _ in range(batches):
        rows = rng.choice(len(x), min(batch_size, len(x)), replace=False)
        batch, second = tf.constant(x[rows]), tf.constant(views[rows])
        if max_shift:
            batch = translate_images(batch, max_shift, generator, image_shape)
            second = translate_images(second, max_shift, generator, image_shape)
        codes = tf.concat([batch, second], axis=0)  # both views encoded in one pass
        for layer in layers[:len(ENCODER_NAMES)]:
            codes = layer(codes)
        z1, z2 = codes[:len(rows)], codes[len(rows):]
        outputs = z1  # only the digits themselves decoded, as in training
        for layer in layers[len(ENCODER_NAMES):]:
            outputs = layer(outputs)
        squared.append(float(tf.reduce_mean(tf.square(outputs - batch))))
        contrast.append(float(nt_xent(z1, z2, temperature)))
    mse, nt = float(np.mean(squared)), float(np.mean(contrast))
    return mse / nt, mse, nt


def _check_training_args(x, max_shift, image_shape, deform, invariance_weight, temperature):
    """``train_autoencoder``'s augmentation arguments, or a ValueError naming one."""
    if max_shift < 0:
        raise ValueError(f"max_shift must be >= 0, got max_shift={max_shift!r}.")
    _check_image_shape(x, max_shift, image_shape)
    if deform is not None and not callable(deform):
        raise ValueError(f"deform must be None or a function (x, epoch) -> deformed x, got "
                         f"deform={deform!r}.")
    if not invariance_weight >= 0:
        raise ValueError(f"invariance_weight must be >= 0, got "
                         f"invariance_weight={invariance_weight!r}.")
    if invariance_weight and deform is None:
        raise ValueError(f"invariance_weight={invariance_weight!r} compares each code with "
                         f"that of a deformed view; it needs deform, got deform=None.")
    if deform is not None and not invariance_weight:
        raise ValueError(f"deform gives the second views of the invariance term; it needs "
                         f"invariance_weight > 0, got invariance_weight={invariance_weight!r}.")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got temperature={temperature!r}.")


def _invariance_step(autoencoder, optimizer, invariance_weight, temperature, batch_size):
    """The step of ``train_autoencoder`` with the invariance term."""

    def invariance_step(views, batch):
        """Reconstruction of ``batch`` plus NT-Xent of its codes against its
        ``views``' codes over the global batch: the codes are gathered (as
        SpectralNet's outputs in ``train.gradient_step``), every replica takes
        the full NT-Xent's gradient with respect to them and back-propagates
        its own rows, and the optimizer sums."""
        rows = tf.shape(batch)[0]
        views, batch = distribute.local_part(views), distribute.local_part(batch)
        local = tf.shape(batch)[0]
        layers = _dense_layers(autoencoder)
        with tf.GradientTape() as tape:
            codes = tf.concat([batch, views], axis=0)  # both views encoded in one pass
            for layer in layers[:len(ENCODER_NAMES)]:
                codes = layer(codes)
            outputs = codes[:local]  # only the digits themselves decoded
            for layer in layers[len(ENCODER_NAMES):]:
                outputs = layer(outputs)
            reconstruction = distribute.replica_share(
                tf.reduce_mean(tf.square(outputs - batch)), rows)
        # One gather of both views' codes side by side.
        both = distribute.all_gather_rows(tf.concat([codes[:local], codes[local:]], axis=1),
                                          rows, batch_size)
        z1, z2 = tf.split(both, 2, axis=1)
        with tf.GradientTape() as loss_tape:
            loss_tape.watch([z1, z2])
            contrast = nt_xent(z1, z2, temperature)
        g1, g2 = loss_tape.gradient(contrast, [z1, z2])
        grad_codes = invariance_weight * tf.concat(
            [distribute.local_part(g1), distribute.local_part(g2)], axis=0)
        grads = tape.gradient([reconstruction, codes], autoencoder.trainable_variables,
                              output_gradients=[tf.ones_like(reconstruction), grad_codes])
        optimizer.apply_gradients(zip(grads, autoencoder.trainable_variables))  # summed
        return distribute.all_sum(reconstruction
                                  + invariance_weight * distribute.even_share(contrast))

    return invariance_step


def train_autoencoder(autoencoder, x, *, epochs=50, batch_size=256, learning_rate=1e-3,
                      max_shift=0.0, image_shape=None, deform=None,
                      invariance_weight=0.0, temperature=0.5,
                      validation_fraction=0.01, seed=0, verbose=1, checkpointer=None,
                      strategy=None):
    """Reconstruction training: MSE, Adam at a constant learning rate, a fresh
    shuffle each epoch.

    With ``max_shift`` > 0 (rows of x are images of ``image_shape``) each batch
    is first moved by ``translate_images``, and the moved images are both
    input and target: more handwriting positions to learn from.

    With ``invariance_weight`` > 0 and ``deform`` (a function ``(x, epoch) ->
    x`` with each row deformed, epochs from 0, deterministic in its arguments
    so that a resumed run and every worker draw the same; e.g.
    the harness's ``infimnist.redeform``) each epoch's deformed rows are second views: the
    autoencoder reconstructs x itself, and the loss adds ``invariance_weight``
    times ``losses.nt_xent`` (at ``temperature``) of each row's code against
    its deformed view's code, the batch's other codes being the ones to tell
    it from, so codes learn to leave the deformations out while keeping the
    digits apart. With ``max_shift`` the two views move by offsets of their
    own; under a strategy each code is still told apart from the whole global
    batch's. This holds a second copy of x, and ``deform`` runs before each
    epoch, not beside it.

    Each epoch is one compiled ``tf.function``; with a ``checkpointer`` every
    epoch is saved and an interrupted run resumes with the same weights,
    optimizer state, shuffling and augmentation stream. The validation loss
    (on a random ``validation_fraction`` of x, also trained on; neither
    shifted nor deformed) is reported only. With a ``tf.distribute``
    ``strategy`` (``autoencoder`` built in its scope) each batch, drawn and
    augmented once, is split over the replicas (``distribute``).
    Returns the history dict."""
    strategy = distribute.get(strategy)
    _check_training_args(x, max_shift, image_shape, deform, invariance_weight, temperature)
    x = np.asarray(x, dtype=np.float32)
    n = len(x)
    x_all = tf.constant(x)
    val = tf.constant(x[np.random.default_rng(seed).permutation(n)[: max(1, int(validation_fraction * n))]])
    steps = int(np.ceil(n / batch_size))
    # Each epoch's deformed views, set before it (the epoch from the
    # optimizer's step count, so a resumed run draws the same ones).
    views_all = tf.Variable(x_all, trainable=False) if deform is not None else None
    generator = tf.random.Generator.from_seed(seed)
    with strategy.scope():
        optimizer = keras.optimizers.Adam(learning_rate)
        optimizer.build(autoencoder.trainable_variables)

    def mse(batch):
        return tf.reduce_mean(tf.square(autoencoder(batch, training=True) - batch))

    def step(batch):
        rows = tf.shape(batch)[0]
        local = distribute.local_part(batch)
        with tf.GradientTape() as tape:
            loss = distribute.replica_share(mse(local), rows)
        grads = tape.gradient(loss, autoencoder.trainable_variables)
        optimizer.apply_gradients(zip(grads, autoencoder.trainable_variables))  # summed
        return distribute.all_sum(loss)

    invariance_step = _invariance_step(autoencoder, optimizer, invariance_weight, temperature,
                                       batch_size)

    @tf.function
    def run_epoch():
        order = tf.argsort(generator.uniform([n]))
        total = tf.constant(0.0)
        for s in tf.range(steps):
            rows = order[s * batch_size:(s + 1) * batch_size]
            batch = tf.gather(x_all, rows)
            if max_shift:
                batch = translate_images(batch, max_shift, generator, image_shape)
            if invariance_weight:  # deform is set (checked above)
                views = tf.gather(views_all, rows)
                if max_shift:  # the second views move by offsets of their own
                    views = translate_images(views, max_shift, generator, image_shape)
                total += distribute.run(strategy, invariance_step, views, batch)
            else:
                total += distribute.run(strategy, step, batch)
        return total / steps

    def epoch_with_views():
        if deform is not None:
            epoch = int(optimizer.iterations.numpy()) // steps
            views_all.assign(_deformed(deform, x, epoch))
        return run_epoch()

    @tf.function
    def validation_loss():
        return mse(val)

    # A constant learning rate: no schedule among the callbacks.
    callbacks = [ProgressBar(verbose)]
    if checkpointer is not None:
        callbacks.append(Checkpoint(checkpointer))
    training = Training("Autoencoder", autoencoder, optimizer, generator, epochs, strategy)
    return run_epochs(training, epoch_with_views, validation_loss, callbacks)
